// Subscribers: server-side paged, sorted and searched (the browser holds one page, however many rows exist).
import { Paper, Table, TextInput, Title, UnstyledButton } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { api, unwrap } from "../../api/client";
import { PageTitle } from "../common/PageTitle";
import { Pager } from "../common/Pager";
import { QueryView } from "../common/QueryView";
import { queryOf, usePageParams } from "../common/usePaged";
import { ImportCsv } from "./ImportCsv";

const COLUMNS = [
  { key: "imsi", label: "IMSI" },
  { key: "ue_ip", label: "UE address" },
  { key: "tenant_id", label: "Tenant" },
  { key: "created_at", label: "Created" },
];

export function SubscribersPage() {
  const [params, setParams] = usePageParams({ sort: "imsi" });
  const [search, setSearch] = useState(params.q);
  const [debounced] = useDebouncedValue(search, 250);
  useEffect(() => {
    if (debounced !== params.q) setParams({ q: debounced, page: 1 });
  }, [debounced]); // eslint-disable-line react-hooks/exhaustive-deps
  const query = queryOf(params);
  const subs = useQuery({
    queryKey: ["subscribers", query],
    queryFn: () => unwrap(api.GET("/api/v1/subscribers", { params: { query } })),
    placeholderData: keepPreviousData,
  });
  const sortBy = (key: string) => setParams({ sort: params.sort === key ? `-${key}` : key, page: 1 });
  const ariaSort = (key: string) => (params.sort === key ? "ascending" : params.sort === `-${key}` ? "descending" : "none");

  return (
    <>
      <PageTitle>Subscribers</PageTitle>
      <Paper withBorder p="md" mb="md">
        <Title order={2} size="h4" mb="sm">Import CSV</Title>
        <ImportCsv />
      </Paper>
      <TextInput label="Search subscribers (IMSI or address)" maw={360} mb="sm" value={search}
        onChange={(e) => setSearch(e.currentTarget.value)} />
      <QueryView query={subs}>
        {(page) => (
          <>
            <Table.ScrollContainer minWidth={600}>
              <Table striped aria-label="Subscribers" style={{ opacity: subs.isPlaceholderData ? 0.6 : 1 }}>
                <Table.Thead>
                  <Table.Tr>
                    {COLUMNS.map((c) => (
                      <Table.Th key={c.key} aria-sort={ariaSort(c.key)}>
                        <UnstyledButton onClick={() => sortBy(c.key)} fw={600}>
                          {c.label} {params.sort === c.key ? "▲" : params.sort === `-${c.key}` ? "▼" : ""}
                        </UnstyledButton>
                      </Table.Th>
                    ))}
                    <Table.Th>TEIDs</Table.Th><Table.Th>Slices</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {page.data.map((s) => (
                    <Table.Tr key={s.id}>
                      <Table.Td ff="monospace">{s.imsi}</Table.Td><Table.Td>{s.ue_ip}</Table.Td>
                      <Table.Td>{s.tenant_id}</Table.Td><Table.Td>{new Date(s.created_at).toLocaleString()}</Table.Td>
                      <Table.Td>{s.teids.join(", ")}</Table.Td><Table.Td>{s.slice_ids.join(", ")}</Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
            <Pager count={page.count} params={params} onPage={(p) => setParams({ page: p })} />
          </>
        )}
      </QueryView>
    </>
  );
}
