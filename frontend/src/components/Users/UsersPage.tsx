// Users (operators only): who can log in, in which role and tenant; create, reset a password,
// disable or enable (disabling asks first: the user is logged out of the portal).
import { useState } from "react";
import { Badge, Button, Group, Table, TextInput, VisuallyHidden } from "@mantine/core";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "../../api/client";
import { useSession } from "../../auth/session";
import { useConfirm } from "../common/Confirm";
import { Dialog } from "../common/Dialog";
import { PageTitle } from "../common/PageTitle";
import { Pager } from "../common/Pager";
import { QueryView } from "../common/QueryView";
import { queryOf, usePageParams } from "../common/usePaged";
import { useAllTenants } from "../Tenants/queries";
import { UserForm } from "./UserForm";

type User = Schemas["UserPublic"];

export function UsersPage() {
  const qc = useQueryClient();
  const { me } = useSession();
  const [params, setParams] = usePageParams({ sort: "username" });
  const query = queryOf(params);
  const users = useQuery({
    queryKey: ["users", query],
    queryFn: () => unwrap(api.GET("/api/v1/users", { params: { query } })),
    placeholderData: keepPreviousData,
  });
  const tenants = useAllTenants();
  const tenantName = new Map((tenants.data?.data ?? []).map((t) => [t.id, t.name]));
  const [editing, setEditing] = useState<User | "new" | null>(null);
  const confirm = useConfirm();
  const setActive = (u: User, active: boolean) =>
    unwrap(
      api.PATCH("/api/v1/users/{user_id}", {
        params: { path: { user_id: u.id } },
        body: { is_active: active, version: u.version },
      }),
    ).then(() => qc.invalidateQueries({ queryKey: ["users"] }));
  const askDisable = (u: User) =>
    confirm.ask({
      title: `Disable user ${u.username}?`,
      message:
        `${u.username} (${u.role}${u.tenant_id ? `, ${tenantName.get(u.tenant_id) ?? `tenant ${u.tenant_id}`}` : ""}) `
        + "can no longer log in. You can enable the user again later.",
      confirmLabel: "Disable user",
      action: () => setActive(u, false),
    });

  return (
    <>
      <PageTitle actions={<Button onClick={() => setEditing("new")}>New user</Button>}>Users</PageTitle>
      <TextInput
        label="Search users"
        w={320}
        maw="100%"
        mb="sm"
        value={params.q}
        onChange={(e) => setParams({ q: e.currentTarget.value, page: 1 })}
      />
      <QueryView query={users}>
        {(page) => (
          <>
            <Table.ScrollContainer minWidth={640}>
              <Table striped aria-label="Users">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Username</Table.Th>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>Role</Table.Th>
                    <Table.Th>Tenant</Table.Th>
                    <Table.Th>Status</Table.Th>
                    <Table.Th>
                      <VisuallyHidden>Actions</VisuallyHidden>
                    </Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {page.data.map((u) => (
                    <Table.Tr key={u.id}>
                      <Table.Td fw={600}>{u.username}</Table.Td>
                      <Table.Td>{u.full_name || "—"}</Table.Td>
                      <Table.Td>{u.role}</Table.Td>
                      <Table.Td>
                        {u.tenant_id ? (tenantName.get(u.tenant_id) ?? `tenant ${u.tenant_id}`) : "—"}
                      </Table.Td>
                      <Table.Td>
                        <Badge variant="light" color={u.is_active ? "green" : "gray"}>
                          {u.is_active ? "active" : "disabled"}
                        </Badge>
                      </Table.Td>
                      <Table.Td>
                        <Group gap={4} wrap="nowrap">
                          <Button
                            size="compact-xs"
                            variant="subtle"
                            onClick={() => setEditing(u)}
                            aria-label={`Edit user ${u.username}`}>
                            Edit
                          </Button>
                          {u.id !== me?.id
                            && (u.is_active ? (
                              <Button
                                size="compact-xs"
                                variant="subtle"
                                color="red"
                                onClick={() => askDisable(u)}
                                aria-label={`Disable user ${u.username}`}>
                                Disable
                              </Button>
                            ) : (
                              <Button
                                size="compact-xs"
                                variant="subtle"
                                onClick={() => void setActive(u, true)}
                                aria-label={`Enable user ${u.username}`}>
                                Enable
                              </Button>
                            ))}
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
        title={editing === "new" ? "New user" : `Edit user ${editing?.username ?? ""}`}>
        {editing !== null && (
          <UserForm user={editing === "new" ? undefined : editing} onDone={() => setEditing(null)} />
        )}
      </Dialog>
      {confirm.dialog}
    </>
  );
}
