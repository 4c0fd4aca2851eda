// Rule-set diffs of one backend, as the API computes them with the push's own diff: what a deploy
// would change (the preview against the rule set in force) and what separates any two rule sets of
// the deployment history. Entries are the data plane's native ones, grouped per table.
import { useState } from "react";
import { Badge, Code, Group, List, NativeSelect, Stack, Text, Title } from "@mantine/core";
import { useQuery } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "../../api/client";
import { QueryView } from "../common/QueryView";

export type RuleSetDiff = Schemas["RuleSetDiffPublic"];
type Entry = Record<string, unknown>;
// Native entries are long single tokens: let them break anywhere so a phone never scrolls sideways.
const WRAP = { wordBreak: "break-all", whiteSpace: "pre-wrap" } as const;

function show(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** One native entry on one line: its members in a stable order, nested values as JSON. */
export function formatEntry(entry: Entry): string {
  return Object.keys(entry)
    .sort()
    .map((k) => `${k}=${show(entry[k])}`)
    .join(", ");
}

/** The members a changed entry changed (same key / match, other action or value). */
export function changedFields(before: Entry, after: Entry): { field: string; before: string; after: string }[] {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  return keys
    .filter((k) => show(before[k]) !== show(after[k]))
    .map((field) => ({
      field,
      before: before[field] === undefined ? "—" : show(before[field]),
      after: after[field] === undefined ? "—" : show(after[field]),
    }));
}

function sideName(side: RuleSetDiff["base"]): string {
  return side.active ? `${side.label} (active)` : side.label;
}

/** "2 added, 1 removed, 3 changed" */
export function countsText(d: { added: number; removed: number; changed: number }): string {
  return `${d.added} added, ${d.removed} removed, ${d.changed} changed`;
}

export function DiffView({ diff, testId }: { diff: RuleSetDiff; testId?: string }) {
  const tables = Object.entries(diff.tables);
  return (
    <Stack gap="xs" data-testid={testId}>
      <Group gap="xs">
        <Text size="sm">
          From <b>{sideName(diff.base)}</b> to <b>{sideName(diff.target)}</b>:
        </Text>
        {diff.identical ? (
          <Badge color="gray" variant="light">
            no changes
          </Badge>
        ) : (
          <Text size="sm" data-testid="diff-counts">
            {countsText(diff)}
          </Text>
        )}
      </Group>
      {diff.identical && diff.target.label === "preview" && (
        <Text size="sm" c="dimmed">
          The data plane already holds these rules: a deploy would change nothing.
        </Text>
      )}
      {tables.map(([name, t]) => (
        <details key={name}>
          <summary>
            Table <b>{name}</b>: {countsText(t)}
          </summary>
          <Stack gap={4} mt={4} ml="md" miw={0}>
            {t.added_entries.length > 0 && (
              <div>
                <Title order={4} size="sm">
                  Added
                </Title>
                <List size="xs" aria-label={`${name}: added entries`}>
                  {t.added_entries.map((e, i) => (
                    <List.Item key={i}>
                      <Code style={WRAP}>+ {formatEntry(e)}</Code>
                    </List.Item>
                  ))}
                </List>
              </div>
            )}
            {t.removed_entries.length > 0 && (
              <div>
                <Title order={4} size="sm">
                  Removed
                </Title>
                <List size="xs" aria-label={`${name}: removed entries`}>
                  {t.removed_entries.map((e, i) => (
                    <List.Item key={i}>
                      <Code style={WRAP}>− {formatEntry(e)}</Code>
                    </List.Item>
                  ))}
                </List>
              </div>
            )}
            {t.changed_entries.length > 0 && (
              <div>
                <Title order={4} size="sm">
                  Changed
                </Title>
                <List size="xs" aria-label={`${name}: changed entries`}>
                  {t.changed_entries.map((c, i) => (
                    <List.Item key={i}>
                      {changedFields(c.before, c.after).map((f) => (
                        <Text key={f.field} size="xs" component="div">
                          <Code>{f.field}</Code>: <s style={WRAP}>{f.before}</s> → <b style={WRAP}>{f.after}</b>
                        </Text>
                      ))}
                    </List.Item>
                  ))}
                </List>
              </div>
            )}
            {t.truncated && (
              <Text size="xs" c="dimmed">
                Only the first entries are listed; the counts cover all of them.
              </Text>
            )}
          </Stack>
        </details>
      ))}
    </Stack>
  );
}

/** What a deploy now would change on the backend. */
export function PreviewDiff({ backendId }: { backendId: number }) {
  const diff = useQuery({
    // under "preview": a deploy or rollback invalidates it together with the preview
    queryKey: ["preview", { backendId, diff: true }],
    queryFn: () =>
      unwrap(api.GET("/api/v1/backends/{backend_id}/preview/diff", { params: { path: { backend_id: backendId } } })),
  });
  return (
    <QueryView query={diff} what="rule-set diff">
      {(d) => <DiffView diff={d} testId="preview-diff" />}
    </QueryView>
  );
}

/** Any two rule sets of the history; starts with the one before the active one against the active one. */
export function CompareRuleSets({
  backendId,
  numbers,
  active,
}: {
  backendId: number;
  numbers: number[];
  active?: number;
}) {
  const sorted = [...new Set(numbers)].sort((a, b) => b - a);
  const defaultTo = active ?? sorted[0];
  const defaultFrom = sorted.find((n) => n !== defaultTo);
  const [from, setFrom] = useState<number | undefined>(undefined);
  const [to, setTo] = useState<number | undefined>(undefined);
  const base = from ?? defaultFrom;
  const target = to ?? defaultTo;
  const diff = useQuery({
    queryKey: ["rule-set-diff", { backendId, target, base }],
    enabled: base !== undefined && target !== undefined,
    staleTime: Infinity, // stored rule sets never change
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/backends/{backend_id}/rule-sets/{number}/diff", {
          params: { path: { backend_id: backendId, number: target ?? 1 }, query: { against: base ?? 1 } },
        }),
      ),
  });
  if (sorted.length < 2)
    return (
      <Text size="sm" c="dimmed">
        Two rule sets are needed for a comparison.
      </Text>
    );
  const options = sorted.map((n) => ({
    value: String(n),
    label: n === active ? `rule set ${n} (active)` : `rule set ${n}`,
  }));
  return (
    <Stack gap="xs">
      <Group>
        <NativeSelect
          label="From"
          data={options}
          value={String(base)}
          onChange={(e) => setFrom(Number(e.currentTarget.value))}
        />
        <NativeSelect
          label="To"
          data={options}
          value={String(target)}
          onChange={(e) => setTo(Number(e.currentTarget.value))}
        />
      </Group>
      <QueryView query={diff} what="rule-set diff">
        {(d) => <DiffView diff={d} testId="rule-set-diff" />}
      </QueryView>
    </Stack>
  );
}
