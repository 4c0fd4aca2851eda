// Tenants: paged list with search; create, edit, and delete with a confirmation that says what
// goes with the tenant (the API refuses while slices or subscribers depend on it, and says why).
import { useState } from "react";
import { Anchor, Button, Group, Table, TextInput, VisuallyHidden } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { Link } from "react-router";
import { api, unwrap, type Schemas } from "../../api/client";
import { useConfirm } from "../common/Confirm";
import { Dialog } from "../common/Dialog";
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
  const qc = useQueryClient();
  const confirm = useConfirm();
  const askDelete = (t: Tenant) =>
    confirm.ask({
      title: `Delete tenant ${t.name}?`,
      message:
        `Tenant ${t.name} (VNI ${t.vni}) is deleted. A tenant that still has slices or subscribers cannot be `
        + "deleted: the portal says which, and nothing changes.",
      confirmLabel: "Delete tenant",
      action: async () => {
        await unwrap(api.DELETE("/api/v1/tenants/{tenant_id}", { params: { path: { tenant_id: t.id } } }));
        await qc.invalidateQueries({ queryKey: ["tenants"] });
      },
    });

  return (
    <>
      <PageTitle actions={<Button onClick={() => setEditing("new")}>New tenant</Button>}>Tenants</PageTitle>
      <TextInput
        label="Search tenants"
        mb="sm"
        maw={320}
        value={params.q}
        onChange={(e) => setParams({ q: e.currentTarget.value, page: 1 })}
      />
      <QueryView query={tenants}>
        {(page) => (
          <>
            <Table.ScrollContainer minWidth={720}>
              <Table striped highlightOnHover aria-label="Tenants">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>VNI</Table.Th>
                    <Table.Th>VLAN</Table.Th>
                    <Table.Th>UE pool</Table.Th>
                    <Table.Th>Contact</Table.Th>
                    <Table.Th>
                      <VisuallyHidden>Actions</VisuallyHidden>
                    </Table.Th>
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
                        <Group gap={4} wrap="nowrap">
                          <Anchor
                            component={Link}
                            size="sm"
                            to={`/subscribers?tenant_id=${t.id}`}
                            aria-label={`Subscribers of ${t.name}`}>
                            Subscribers
                          </Anchor>
                          <Button
                            size="compact-xs"
                            variant="subtle"
                            onClick={() => setEditing(t)}
                            aria-label={`Edit ${t.name}`}>
                            Edit
                          </Button>
                          <Button
                            size="compact-xs"
                            variant="subtle"
                            color="red"
                            onClick={() => askDelete(t)}
                            aria-label={`Delete tenant ${t.name}`}>
                            Delete
                          </Button>
                        </Group>
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
      <Dialog
        opened={editing !== null}
        onClose={() => setEditing(null)}
        title={editing === "new" ? "New tenant" : `Edit tenant ${editing?.name ?? ""}`}>
        {editing !== null && (
          <TenantForm tenant={editing === "new" ? undefined : editing} onDone={() => setEditing(null)} />
        )}
      </Dialog>
      {confirm.dialog}
    </>
  );
}
