// Tenants: paged list with search; create, edit, and delete with a confirmation that says what
// goes with the tenant (the API refuses while slices or subscribers depend on it, and says why).
import { Anchor, Button, TextInput } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { Link } from "react-router";
import { api, unwrap, type Schemas } from "../../api/client";
import { useConfirm } from "../common/Confirm";
import { DataTable, RowActions, RowButton, type Column } from "../common/DataTable";
import { useFormDialog } from "../common/Dialog";
import { PageTitle } from "../common/PageTitle";
import { searchField, tablePaging, usePageParams } from "../common/usePaged";
import { useTenants } from "./queries";
import { TenantForm } from "./TenantForm";

type Tenant = Schemas["TenantPublic"];

export function TenantsPage() {
  const [params, setParams] = usePageParams({ sort: "name" });
  const tenants = useTenants(params);
  const editor = useFormDialog<Tenant>(
    (t) => (t ? `Edit tenant ${t.name}` : "New tenant"),
    (t, done) => <TenantForm tenant={t} onDone={done} />,
  );
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

  const columns: Column<Tenant>[] = [
    { key: "name", header: "Name", cell: (t) => t.name, td: { fw: 600 } },
    { key: "vni", header: "VNI", cell: (t) => t.vni },
    { key: "vlan", header: "VLAN", cell: (t) => t.vlan ?? "—" },
    { key: "ue_pool", header: "UE pool", cell: (t) => t.ue_pool ?? "—" },
    { key: "contact", header: "Contact", cell: (t) => t.contact },
    {
      key: "actions",
      header: "Actions",
      hiddenHeader: true,
      cell: (t) => (
        <RowActions>
          <Anchor
            component={Link}
            size="sm"
            to={`/subscribers?tenant_id=${t.id}`}
            aria-label={`Subscribers of ${t.name}`}>
            Subscribers
          </Anchor>
          <RowButton label={`Edit ${t.name}`} onClick={() => editor.open(t)}>
            Edit
          </RowButton>
          <RowButton label={`Delete tenant ${t.name}`} danger onClick={() => askDelete(t)}>
            Delete
          </RowButton>
        </RowActions>
      ),
    },
  ];
  return (
    <>
      <PageTitle actions={<Button onClick={() => editor.open("new")}>New tenant</Button>}>Tenants</PageTitle>
      <TextInput label="Search tenants" mb="sm" maw={320} {...searchField(params, setParams)} />
      <DataTable
        label="Tenants"
        query={tenants}
        {...tablePaging(params, setParams)}
        rowKey={(t) => t.id}
        minWidth={720}
        highlightOnHover
        columns={columns}
      />
      {editor.dialog}
      {confirm.dialog}
    </>
  );
}
