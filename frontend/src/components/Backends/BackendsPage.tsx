// Data-plane backends: list with health, and registration of a new one.
import { useState, type FormEvent } from "react";
import { Anchor, Badge, Button, Group, Modal, Stack, Table, TextInput, Textarea } from "@mantine/core";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { Link } from "react-router";
import { api, ApiProblem, unwrap } from "../../api/client";
import { PageTitle } from "../common/PageTitle";
import { ProblemAlert, QueryView } from "../common/QueryView";
import { useBackends } from "../Slices/queries";

function NewBackend({ onDone }: { onDone: () => void }) {
  const qc = useQueryClient();
  const [name, setName] = useState("");
  const [driver, setDriver] = useState("p4rt");
  const [options, setOptions] = useState("{}");
  const [jsonError, setJsonError] = useState<string | null>(null);
  const create = useMutation({
    mutationFn: (opts: Record<string, unknown>) => unwrap(api.POST("/api/v1/backends", { body: { name, driver, options: opts } })),
    onSuccess: async () => { await qc.invalidateQueries({ queryKey: ["backends"] }); onDone(); },
  });
  const problem = create.error instanceof ApiProblem ? create.error : null;
  function submit(e: FormEvent) {
    e.preventDefault();
    try {
      const parsed: unknown = JSON.parse(options);
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("must be a JSON object");
      setJsonError(null);
      create.mutate(parsed as Record<string, unknown>);
    } catch (err) {
      setJsonError(`Options: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return (
    <form onSubmit={submit} aria-label="New backend">
      <Stack>
        {create.isError && <ProblemAlert error={create.error} />}
        <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} error={problem?.fieldMessage("name")} />
        <TextInput label="Driver" required value={driver} onChange={(e) => setDriver(e.currentTarget.value)}
          description="netfpga, xdp or p4rt" error={problem?.fieldMessage("driver")} />
        <Textarea label="Options (JSON)" autosize minRows={3} value={options} onChange={(e) => setOptions(e.currentTarget.value)}
          error={jsonError ?? problem?.fieldMessage("options")} />
        <Group justify="flex-end"><Button type="submit" loading={create.isPending}>Register backend</Button></Group>
      </Stack>
    </form>
  );
}

export function BackendsPage() {
  const backends = useBackends();
  const [adding, setAdding] = useState(false);
  return (
    <>
      <PageTitle actions={<Button onClick={() => setAdding(true)}>New backend</Button>}>Backends</PageTitle>
      <QueryView query={backends}>
        {(page) => (
          <Table.ScrollContainer minWidth={600}>
            <Table striped aria-label="Backends">
              <Table.Thead><Table.Tr><Table.Th>Name</Table.Th><Table.Th>Driver</Table.Th><Table.Th>Queues</Table.Th>
                <Table.Th>Health</Table.Th><Table.Th>Detail</Table.Th></Table.Tr></Table.Thead>
              <Table.Tbody>
                {page.data.map((b) => (
                  <Table.Tr key={b.id}>
                    <Table.Td><Anchor component={Link} to={`/backends/${b.id}`} fw={600}>{b.name}</Anchor></Table.Td>
                    <Table.Td>{b.driver}</Table.Td><Table.Td>{b.paths} × {b.lanes}</Table.Td>
                    <Table.Td><Badge variant="light">{b.health}</Badge></Table.Td><Table.Td>{b.health_detail}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </QueryView>
      <Modal opened={adding} onClose={() => setAdding(false)} title="New backend">
        {adding && <NewBackend onDone={() => setAdding(false)} />}
      </Modal>
    </>
  );
}
