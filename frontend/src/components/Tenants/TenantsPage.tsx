import { useState } from "react";
import { Button, Modal, Table, TextInput, VisuallyHidden } from "@mantine/core";
import type { Schemas } from "../../api/client";
import { PageTitle } from "../common/PageTitle";
import { Pager } from "../common/Pager";
import { QueryView } from "../common/QueryView";
import { usePageParams } from "../common/usePaged";
import { useTenants } from "./queries";
import { TenantForm } from "./TenantForm";

type Tenant = Schemas["TenantPublic"];

export function TenantsPage() {
  const [params, setParams] = usePageParams({ sort: "name" });
  const tenants = useTenants(params);
  const [editing, setEditing] = useState<Tenant | "new" | null>(null);

  return (
    <>
      <PageTitle actions={<Button onClick={() => setEditing("new")}>New tenant</Button>}>Tenants</PageTitle>
      <TextInput label="Search tenants" mb="sm" maw={320} value={params.q}
        onChange={(e) => setParams({ q: e.currentTarget.value, page: 1 })} />
      <QueryView query={tenants}>
        {(page) => (
          <>
            <Table.ScrollContainer minWidth={600}>
              <Table striped highlightOnHover aria-label="Tenants">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Name</Table.Th><Table.Th>VNI</Table.Th><Table.Th>VLAN</Table.Th>
                    <Table.Th>UE pool</Table.Th><Table.Th>Contact</Table.Th><Table.Th><VisuallyHidden>Actions</VisuallyHidden></Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {page.data.map((t) => (
                    <Table.Tr key={t.id}>
                      <Table.Td fw={600}>{t.name}</Table.Td>
                      <Table.Td>{t.vni}</Table.Td>
                      <Table.Td>{t.vlan ?? "—"}</Table.Td>
                      <Table.Td>{t.ue_pool ?? "—"}</Table.Td>
                      <Table.Td>{t.contact}</Table.Td>
                      <Table.Td>
                        <Button size="xs" variant="subtle" onClick={() => setEditing(t)} aria-label={`Edit ${t.name}`}>Edit</Button>
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
            <Pager count={page.count} params={params} onPage={(p) => setParams({ page: p })} />
          </>
        )}
      </QueryView>
      <Modal opened={editing !== null} onClose={() => setEditing(null)}
        title={editing === "new" ? "New tenant" : "Edit tenant"}>
        {editing !== null && (
          <TenantForm tenant={editing === "new" ? undefined : editing} onDone={() => setEditing(null)} />
        )}
      </Modal>
    </>
  );
}
