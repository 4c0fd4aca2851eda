// Users (operators only): who can log in, in which role and tenant; create, reset a password,
// disable or enable (disabling asks first: the user is logged out of the portal).
import { Badge, Button, TextInput } from "@mantine/core";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "../../api/client";
import { useSession } from "../../auth/session";
import { useConfirm } from "../common/Confirm";
import { DataTable, RowActions, RowButton, type Column } from "../common/DataTable";
import { useFormDialog } from "../common/Dialog";
import { PageTitle } from "../common/PageTitle";
import { queryOf, searchField, tablePaging, usePageParams } from "../common/usePaged";
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
  const editor = useFormDialog<User>(
    (u) => (u ? `Edit user ${u.username}` : "New user"),
    (u, done) => <UserForm user={u} onDone={done} />,
  );
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

  const columns: Column<User>[] = [
    { key: "username", header: "Username", cell: (u) => u.username, td: { fw: 600 } },
    { key: "full_name", header: "Name", cell: (u) => u.full_name || "—" },
    { key: "role", header: "Role", cell: (u) => u.role },
    {
      key: "tenant",
      header: "Tenant",
      cell: (u) => (u.tenant_id ? (tenantName.get(u.tenant_id) ?? `tenant ${u.tenant_id}`) : "—"),
    },
    {
      key: "status",
      header: "Status",
      cell: (u) => (
        <Badge variant="light" color={u.is_active ? "green" : "gray"}>
          {u.is_active ? "active" : "disabled"}
        </Badge>
      ),
    },
    {
      key: "actions",
      header: "Actions",
      hiddenHeader: true,
      cell: (u) => (
        <RowActions>
          <RowButton label={`Edit user ${u.username}`} onClick={() => editor.open(u)}>
            Edit
          </RowButton>
          {u.id !== me?.id
            && (u.is_active ? (
              <RowButton label={`Disable user ${u.username}`} danger onClick={() => askDisable(u)}>
                Disable
              </RowButton>
            ) : (
              <RowButton label={`Enable user ${u.username}`} onClick={() => void setActive(u, true)}>
                Enable
              </RowButton>
            ))}
        </RowActions>
      ),
    },
  ];
  return (
    <>
      <PageTitle actions={<Button onClick={() => editor.open("new")}>New user</Button>}>Users</PageTitle>
      <TextInput label="Search users" w={320} maw="100%" mb="sm" {...searchField(params, setParams)} />
      <DataTable
        label="Users"
        query={users}
        {...tablePaging(params, setParams)}
        rowKey={(u) => u.id}
        minWidth={640}
        columns={columns}
      />
      {editor.dialog}
      {confirm.dialog}
    </>
  );
}
