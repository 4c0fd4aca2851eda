// Data-plane backends: list with health, registration of a new one, and deletion (confirmed,
// naming the slices that still use it; the API refuses while any does).
import { useState, type FormEvent } from "react";
import { Anchor, Button, Group, Stack, Table, Text, TextInput, Textarea, VisuallyHidden } from "@mantine/core";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { Link } from "react-router";
import { api, ApiProblem, unwrap, type Schemas } from "../../api/client";
import { useConfirm } from "../common/Confirm";
import { Dialog } from "../common/Dialog";
import { mapProblem } from "../common/fieldErrors";
import { PageTitle } from "../common/PageTitle";
import { ProblemAlert, QueryView } from "../common/QueryView";
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

export function BackendsPage() {
  const qc = useQueryClient();
  const backends = useBackends();
  const slices = useAllSlices();
  const [adding, setAdding] = useState(false);
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
  return (
    <>
      <PageTitle actions={<Button onClick={() => setAdding(true)}>New backend</Button>}>Backends</PageTitle>
      <QueryView query={backends}>
        {/* a health detail holds a socket path: it breaks inside the path, not one word a line (#29) */}
        {(page) => (
          <Table.ScrollContainer minWidth={900}>
            <Table striped aria-label="Backends">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Name</Table.Th>
                  <Table.Th>Driver</Table.Th>
                  <Table.Th>Queues</Table.Th>
                  <Table.Th>Link capacity</Table.Th>
                  <Table.Th>Health</Table.Th>
                  <Table.Th>Detail</Table.Th>
                  <Table.Th>
                    <VisuallyHidden>Actions</VisuallyHidden>
                  </Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {page.data.map((b) => (
                  <Table.Tr key={b.id}>
                    <Table.Td>
                      <Anchor component={Link} to={`/backends/${b.id}`} fw={600}>
                        {b.name}
                      </Anchor>
                    </Table.Td>
                    <Table.Td>{b.driver}</Table.Td>
                    <Table.Td>
                      {b.paths} × {b.lanes}
                    </Table.Td>
                    <Table.Td>
                      {+(b.link_bps / 1e6).toFixed(3)} Mbit/s
                      {Object.keys(b.port_bps).length > 0
                        ? ` · ${Object.keys(b.port_bps).length} ${Object.keys(b.port_bps).length === 1 ? "port" : "ports"}`
                        : ""}
                    </Table.Td>
                    <Table.Td>
                      <StatusBadge kind="health" value={b.health} data-testid={`health-${b.id}`} />
                    </Table.Td>
                    <Table.Td miw={260} style={{ overflowWrap: "anywhere" }}>
                      {b.health_detail}
                    </Table.Td>
                    <Table.Td>
                      <Button
                        size="compact-xs"
                        variant="subtle"
                        color="red"
                        onClick={() => askDelete(b)}
                        aria-label={`Delete backend ${b.name}`}>
                        Delete
                      </Button>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </QueryView>
      <Dialog opened={adding} onClose={() => setAdding(false)} title="New backend">
        {adding && <NewBackend onDone={() => setAdding(false)} />}
      </Dialog>
      {confirm.dialog}
    </>
  );
}
