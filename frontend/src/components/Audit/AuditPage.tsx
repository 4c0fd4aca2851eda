import { Code, Table, TextInput } from "@mantine/core";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../../api/client";
import { PageTitle } from "../common/PageTitle";
import { Pager } from "../common/Pager";
import { QueryView } from "../common/QueryView";
import { queryOf, usePageParams } from "../common/usePaged";

export function AuditPage() {
  const [params, setParams] = usePageParams({ sort: "-ts" });
  const query = queryOf(params);
  const audit = useQuery({
    queryKey: ["audit", query],
    queryFn: () => unwrap(api.GET("/api/v1/audit", { params: { query } })),
    placeholderData: keepPreviousData,
  });
  return (
    <>
      <PageTitle>Audit log</PageTitle>
      <TextInput label="Search the audit log" maw={320} mb="sm" value={params.q} onChange={(e) => setParams({ q: e.currentTarget.value, page: 1 })} />
      <QueryView query={audit}>
        {(page) => (
          <>
            <Table.ScrollContainer minWidth={800}>
              <Table striped aria-label="Audit log">
                <Table.Thead><Table.Tr><Table.Th>When</Table.Th><Table.Th>Who</Table.Th><Table.Th>Via</Table.Th>
                  <Table.Th>Action</Table.Th><Table.Th>Object</Table.Th><Table.Th>Change</Table.Th></Table.Tr></Table.Thead>
                <Table.Tbody>
                  {page.data.map((a) => (
                    <Table.Tr key={a.id}>
                      <Table.Td>{new Date(a.ts).toLocaleString()}</Table.Td><Table.Td>{a.actor}</Table.Td><Table.Td>{a.via}</Table.Td>
                      <Table.Td>{a.action}</Table.Td><Table.Td>{a.object_type} {a.object_id ?? ""}</Table.Td>
                      <Table.Td><Code style={{ whiteSpace: "pre-wrap", maxWidth: 420, display: "block" }}>
                        {JSON.stringify(a.after ?? a.before ?? {}).slice(0, 300)}
                      </Code></Table.Td>
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
