// The one table every list of the portal uses: the server pages and sorts (the browser holds one
// page, whatever the total), and the table says in words when it loads, fails or has no rows.
// Sorting is a button in the column header (Tab + Enter/Space), announced through aria-sort.
// A short list the API answers whole (the slice types, the API keys) is the same table without a pager.
import type { ReactNode } from "react";
import { Anchor, Button, Center, Group, Loader, Table, Text, UnstyledButton, type TableTdProps } from "@mantine/core";
import type { UseQueryResult } from "@tanstack/react-query";
import { Link } from "react-router";
import { ApiProblem } from "../../api/client";
import { Pager } from "./Pager";
import { NotFound, ProblemAlert } from "./QueryView";
import type { PageParams } from "./usePaged";

export interface Column<T> {
  /** Stable id of the column; for a sortable column also the API's sort key. */
  key: string;
  header: ReactNode;
  cell: (row: T) => ReactNode;
  sortable?: boolean;
  /** Header hidden from sight (an actions column), still read by screen readers. */
  hiddenHeader?: boolean;
  /** The column is only as wide as its cells need (an actions column beside wide ones). */
  narrow?: boolean;
  /** Props of the column's cells: weight, width, font ({ fw: 600 } for the row's name). */
  td?: TableTdProps;
}

export interface PageOf<T> {
  data: T[];
  count: number;
}

export interface DataTableProps<T> {
  /** The table's accessible name. */
  label: string;
  columns: readonly Column<T>[];
  rowKey: (row: T) => string | number;
  /** A page of the server's rows, or all of a short list's rows (then there is no pager). */
  query: UseQueryResult<PageOf<T> | readonly T[]>;
  /** Current page, size and sort; ``onPage`` / ``onSort`` ask the caller (URL or state) for the next. */
  params?: PageParams;
  /** Without it (a short list, answered whole) the table has no pager. */
  onPage?: (page: number) => void;
  onSort?: (sort: string) => void;
  /** Shown in the table when the answer has no rows (e.g. "No entries match these filters."); without it, no row. */
  empty?: ReactNode;
  /** Below this width the table scrolls sideways instead of squeezing its columns. */
  minWidth?: number;
  /** Whether the pager shows when everything fits on one page (lists whose total matters: yes). */
  pagerWhenOnePage?: boolean;
  what?: string;
  rowProps?: (row: T) => Record<string, string | undefined>;
  highlightOnHover?: boolean;
  /** A short cell stands at the top of a tall one beside it (an audit entry's changes), not in its middle. */
  alignTop?: boolean;
}

/** The next sort when a column's header is pressed: ascending first, then descending. */
export function nextSort(current: string, key: string): string {
  return current === key ? `-${key}` : key;
}

export function ariaSort(current: string, key: string): "ascending" | "descending" | "none" {
  return current === key ? "ascending" : current === `-${key}` ? "descending" : "none";
}

export function DataTable<T>({
  label,
  columns,
  rowKey,
  query,
  params,
  onPage,
  onSort,
  empty,
  minWidth = 0,
  pagerWhenOnePage = true,
  what,
  rowProps,
  highlightOnHover = false,
  alignTop = false,
}: DataTableProps<T>) {
  if (query.isError && !query.data) {
    if (query.error instanceof ApiProblem && query.error.status === 404) return <NotFound what={what} />;
    return <ProblemAlert error={query.error} />;
  }
  const page = query.data && (isRows(query.data) ? { data: query.data, count: query.data.length } : query.data);
  const sort = onSort && params ? params.sort : null;
  const stale = query.isPlaceholderData;
  const body = (() => {
    if (!page) {
      return (
        <Table.Tr>
          <Table.Td colSpan={columns.length}>
            <Center p="md">
              <Loader size="sm" role="status" aria-label="Loading" />
            </Center>
          </Table.Td>
        </Table.Tr>
      );
    }
    if (page.data.length === 0) {
      if (empty === undefined) return null;
      return (
        <Table.Tr>
          <Table.Td colSpan={columns.length}>
            <Text size="sm" c="dimmed">
              {empty}
            </Text>
          </Table.Td>
        </Table.Tr>
      );
    }
    return page.data.map((row) => (
      <Table.Tr key={rowKey(row)} {...rowProps?.(row)}>
        {columns.map((c) => (
          <Table.Td key={c.key} {...c.td} style={[alignTop ? { verticalAlign: "top" } : undefined, c.td?.style]}>
            {c.cell(row)}
          </Table.Td>
        ))}
      </Table.Tr>
    ));
  })();
  const pages = page && params ? Math.ceil(page.count / params.limit) : 0;
  return (
    <>
      {query.isError && <ProblemAlert error={query.error} />}
      <Table.ScrollContainer minWidth={minWidth}>
        <Table
          striped
          highlightOnHover={highlightOnHover}
          aria-label={label}
          aria-busy={!page || stale}
          style={{ opacity: stale ? 0.6 : 1 }}>
          <Table.Thead>
            <Table.Tr>
              {columns.map((c) => (
                <Table.Th
                  key={c.key}
                  aria-sort={c.sortable && sort !== null ? ariaSort(sort, c.key) : undefined}
                  style={c.narrow ? { width: 1 } : undefined}>
                  {c.hiddenHeader ? (
                    <span style={VISUALLY_HIDDEN}>{c.header}</span>
                  ) : c.sortable && onSort && sort !== null ? (
                    <UnstyledButton onClick={() => onSort(nextSort(sort, c.key))} fw={600} fz="sm">
                      {c.header}
                      <span aria-hidden="true">{sort === c.key ? " ▲" : sort === `-${c.key}` ? " ▼" : ""}</span>
                    </UnstyledButton>
                  ) : (
                    c.header
                  )}
                </Table.Th>
              ))}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>{body}</Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {page && params && onPage && (pagerWhenOnePage || pages > 1) && (
        <Pager count={page.count} params={params} onPage={onPage} />
      )}
    </>
  );
}

function isRows<T>(data: PageOf<T> | readonly T[]): data is readonly T[] {
  return Array.isArray(data);
}

/** A row's name as the link to its own page (a slice's, a backend's). */
export function RowLink({ to, children }: { to: string; children: ReactNode }) {
  return (
    <Anchor component={Link} to={to} fw={600}>
      {children}
    </Anchor>
  );
}

/** The buttons of a row's actions column, side by side. */
export function RowActions({ children }: { children: ReactNode }) {
  return (
    <Group gap={4} wrap="nowrap">
      {children}
    </Group>
  );
}

/**
 * One action on a row (Edit, Delete …): a small quiet button, red when ``danger``. Its ``label``
 * names the row too ("Delete tenant acme"): a screen reader hears which of the many it is.
 */
export function RowButton({
  label,
  onClick,
  danger = false,
  children,
}: {
  label: string;
  onClick: () => void;
  danger?: boolean;
  children: ReactNode;
}) {
  return (
    <Button size="compact-xs" variant="subtle" color={danger ? "red" : undefined} onClick={onClick} aria-label={label}>
      {children}
    </Button>
  );
}

// Mantine's VisuallyHidden renders a div, which is not allowed inside a <th> in every reader.
const VISUALLY_HIDDEN = {
  position: "absolute",
  width: 1,
  height: 1,
  padding: 0,
  margin: -1,
  overflow: "hidden",
  clip: "rect(0, 0, 0, 0)",
  whiteSpace: "nowrap",
  border: 0,
} as const;
