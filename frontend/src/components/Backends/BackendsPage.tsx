// Data-plane backends: list with health, registration of a new one, and deletion (confirmed,
// naming the slices that still use it; the API refuses while any does).
import { useState, type FormEvent } from "react";
import { Button, Group, Stack, Text, TextInput, Textarea } from "@mantine/core";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, ApiProblem, unwrap, type Schemas } from "../../api/client";
import { useConfirm } from "../common/Confirm";
import { DataTable, RowButton, RowLink, type Column } from "../common/DataTable";
import { useFormDialog } from "../common/Dialog";
import { mapProblem } from "../common/fieldErrors";
import { PageTitle } from "../common/PageTitle";
import { ProblemAlert } from "../common/QueryView";
import { StatusBadge } from "../common/statusWords";
import { useBackends } from "../Slices/queries";
import { useAllSlices } from "../Subscribers/lookups";

type Backend = Schemas["BackendPublic"];
const FIELDS = ["name", "driver", "options"] as const;

function NewBackend({ onDone }: { onDone: () => void }) {
  const qc = useQueryClient();
  const [name, setName] = useState("");
  const [driver, setDriver] = useState("p4rt");
  const [options, setOptions] = useState("{}");
  const [jsonError, setJsonError] = useState<string | null>(null);
  const create = useMutation({
    mutationFn: (opts: Record<string, unknown>) =>
      unwrap(api.POST("/api/v1/backends", { body: { name, driver, options: opts } })),
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: ["backends"] });
      onDone();
    },
  });
  const problem = create.error instanceof ApiProblem ? create.error : null;
  const remote = mapProblem(problem, FIELDS).byField;
  function submit(e: FormEvent) {
    e.preventDefault();
    try {
      const parsed: unknown = JSON.parse(options);
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
        throw new Error("must be a JSON object");
      setJsonError(null);
      create.mutate(parsed as Record<string, unknown>);
    } catch (err) {
      setJsonError(`Options: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return (
    <form onSubmit={submit} aria-label="New backend" noValidate>
      <Stack>
        {create.isError && <ProblemAlert error={create.error} shownOnFields={FIELDS} />}
        <TextInput
          label="Name"
          required
          value={name}
          onChange={(e) => setName(e.currentTarget.value)}
          error={remote.name}
        />
        <TextInput
          label="Driver"
          required
          value={driver}
          onChange={(e) => setDriver(e.currentTarget.value)}
          description="netfpga, xdp or p4rt"
          error={remote.driver}
        />
        <Textarea
          label="Options (JSON)"
          autosize
          minRows={3}
          value={options}
          onChange={(e) => setOptions(e.currentTarget.value)}
          error={jsonError ?? remote.options}
        />
        <Group justify="flex-end">
          <Button type="submit" loading={create.isPending}>
            Register backend
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

/** "1000 Mbit/s · 2 ports": the backend's link rate, and how many ports have their own. */
function linkCapacity(b: Backend): string {
  const ports = Object.keys(b.port_bps).length;
  return `${+(b.link_bps / 1e6).toFixed(3)} Mbit/s${ports > 0 ? ` · ${ports} ${ports === 1 ? "port" : "ports"}` : ""}`;
}

export function BackendsPage() {
  const qc = useQueryClient();
  const backends = useBackends();
  const slices = useAllSlices();
  const adder = useFormDialog<never>(
    () => "New backend",
    (_, done) => <NewBackend onDone={done} />,
  );
  const confirm = useConfirm();
  const askDelete = (b: Backend) => {
    const using = (slices.data?.data ?? []).filter((s) => s.backend_ids.includes(b.id)).map((s) => s.name);
    confirm.ask({
      title: `Delete backend ${b.name}?`,
      message: (
        <Stack gap={4}>
          <Text size="sm">
            {b.name} ({b.driver}) is removed from the portal with its deployment history. The device itself keeps the
            rules it holds until it is reset.
          </Text>
          {using.length > 0 && (
            <Text size="sm" c="red.8">
              Still used by {using.length === 1 ? "slice" : "slices"} {using.join(", ")}: remove it from
              {using.length === 1 ? " that slice" : " those slices"} first, or the deletion is refused.
            </Text>
          )}
        </Stack>
      ),
      confirmLabel: "Delete backend",
      action: async () => {
        await unwrap(api.DELETE("/api/v1/backends/{backend_id}", { params: { path: { backend_id: b.id } } }));
        await qc.invalidateQueries({ queryKey: ["backends"] });
      },
    });
  };
  const columns: Column<Backend>[] = [
    { key: "name", header: "Name", cell: (b) => <RowLink to={`/backends/${b.id}`}>{b.name}</RowLink> },
    { key: "driver", header: "Driver", cell: (b) => b.driver },
    { key: "queues", header: "Queues", cell: (b) => `${b.paths} × ${b.lanes}` },
    { key: "link", header: "Link capacity", cell: linkCapacity },
    {
      key: "health",
      header: "Health",
      cell: (b) => <StatusBadge kind="health" value={b.health} data-testid={`health-${b.id}`} />,
    },
    {
      key: "detail",
      header: "Detail",
      cell: (b) => b.health_detail,
      td: { miw: 260, style: { overflowWrap: "anywhere" } },
    },
    {
      key: "actions",
      header: "Actions",
      hiddenHeader: true,
      cell: (b) => (
        <RowButton label={`Delete backend ${b.name}`} danger onClick={() => askDelete(b)}>
          Delete
        </RowButton>
      ),
    },
  ];
  return (
    <>
      <PageTitle actions={<Button onClick={() => adder.open("new")}>New backend</Button>}>Backends</PageTitle>
      {/* a health detail holds a socket path: it breaks inside the path, not one word a line (#29) */}
      <DataTable label="Backends" query={backends} rowKey={(b) => b.id} minWidth={900} columns={columns} />
      {adder.dialog}
      {confirm.dialog}
    </>
  );
}
