import { Group, Pagination, Text } from "@mantine/core";
import type { PageParams } from "./usePaged";

export function Pager({ count, params, onPage }: { count: number; params: PageParams; onPage: (p: number) => void }) {
  const pages = Math.max(1, Math.ceil(count / params.limit));
  return (
    <Group justify="space-between" mt="sm">
      <Text size="sm" c="dimmed" data-testid="row-count">
        {count.toLocaleString("en")} rows
      </Text>
      <Pagination
        total={pages}
        value={Math.min(params.page, pages)}
        onChange={onPage}
        withEdges
        getControlProps={(c) => ({ "aria-label": `${c} page` })}
        getItemProps={(p) => ({ "aria-label": `Page ${p}` })}
        aria-label="Pages"
      />
    </Group>
  );
}
