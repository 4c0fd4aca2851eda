// Operator edits of a deployed or draft slice: which backends it is on, and its services
// (only the slice type's lanes can be chosen). A 412 means someone else changed the slice.
import { useState, type ReactNode } from "react";
import { ActionIcon, Button, Checkbox, Group, NumberInput, Select, Stack, Table, TextInput } from "@mantine/core";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, ApiProblem, unwrap, type Schemas } from "../../api/client";
import { NO_CLAMP } from "../common/numberRange";
import { ProblemAlert } from "../common/QueryView";
import { useBackends } from "./queries";
import { portError, toServiceCreate, type ServiceDraft } from "./ServicesEditor";

type Slice = Schemas["SlicePublic"];

type Service = Slice["services"][number];

/**
 * A slice's services, one a row. The operator's copy (with ``remove``, a service's remove button)
 * also names each service's protocol.
 */
export function ServicesTable({ services, remove }: { services: Service[]; remove?: (svc: Service) => ReactNode }) {
  return (
    <Table aria-label="Services">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Service</Table.Th>
          <Table.Th>Lane</Table.Th>
          <Table.Th>Dst ports</Table.Th>
          <Table.Th>DSCP</Table.Th>
          {remove && (
            <>
              <Table.Th>Protocol</Table.Th>
              <Table.Th />
            </>
          )}
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {services.map((svc) => (
          <Table.Tr key={svc.id}>
            <Table.Td>{svc.name}</Table.Td>
            <Table.Td>{svc.lane}</Table.Td>
            <Table.Td>
              {svc.dst_ports.map((p) => (p.lo === p.hi ? p.lo : `${p.lo}–${p.hi}`)).join(", ") || "any"}
            </Table.Td>
            <Table.Td>{svc.dscp.join(", ") || "any"}</Table.Td>
            {remove && (
              <>
                <Table.Td>{svc.protocol}</Table.Td>
                <Table.Td>{remove(svc)}</Table.Td>
              </>
            )}
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

export function BackendsEditor({ slice }: { slice: Slice }) {
  const qc = useQueryClient();
  const backends = useBackends();
  const [ids, setIds] = useState(slice.backend_ids.map(String));
  const save = useMutation({
    mutationFn: () =>
      unwrap(
        api.PATCH("/api/v1/slices/{slice_id}", {
          params: { path: { slice_id: slice.id } },
          body: { backend_ids: ids.map(Number), version: slice.version },
        }),
      ),
    onSuccess: () => qc.invalidateQueries({ queryKey: ["slices"] }),
  });
  return (
    <Stack>
      {save.isError && <ProblemAlert error={save.error} />}
      <Checkbox.Group
        label="Deployed on"
        value={ids}
        onChange={setIds}
        error={save.error instanceof ApiProblem ? save.error.fieldMessage("backend_ids") : undefined}>
        <Group mt="xs">
          {(backends.data?.data ?? []).map((b) => (
            <Checkbox key={b.id} value={String(b.id)} label={`${b.name} (${b.driver})`} />
          ))}
        </Group>
      </Checkbox.Group>
      <Group justify="flex-end">
        <Button variant="light" loading={save.isPending} onClick={() => save.mutate()}>
          Save backends
        </Button>
      </Group>
    </Stack>
  );
}

export function ServicesEdit({ slice }: { slice: Slice }) {
  const qc = useQueryClient();
  const blank = (): ServiceDraft => ({
    name: "",
    lane: slice.lanes[0] ?? 0,
    portLo: "",
    portHi: "",
    dscp: "",
    protocol: "any",
  });
  const [draft, setDraft] = useState<ServiceDraft>(blank);
  const refresh = () => qc.invalidateQueries({ queryKey: ["slices"] });
  const add = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST("/api/v1/slices/{slice_id}/services", {
          params: { path: { slice_id: slice.id } },
          body: toServiceCreate(draft),
        }),
      ),
    onSuccess: async () => {
      setDraft(blank());
      await refresh();
    },
  });
  const remove = useMutation({
    mutationFn: (serviceId: number) =>
      unwrap(
        api.DELETE("/api/v1/slices/{slice_id}/services/{service_id}", {
          params: { path: { slice_id: slice.id, service_id: serviceId } },
        }),
      ),
    onSuccess: refresh,
  });
  const problem = add.error instanceof ApiProblem ? add.error : null;
  const draftError = portError(draft);
  return (
    <Stack>
      {(add.isError || remove.isError) && <ProblemAlert error={add.error ?? remove.error} />}
      <ServicesTable
        services={slice.services}
        remove={(svc) => (
          <ActionIcon
            variant="subtle"
            color="red"
            aria-label={`Remove service ${svc.name}`}
            loading={remove.isPending && remove.variables === svc.id}
            onClick={() => remove.mutate(svc.id)}>
            ✕
          </ActionIcon>
        )}
      />
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (!draftError) add.mutate();
        }}
        aria-label="Add a service">
        <Group align="end">
          <TextInput
            label="New service"
            required
            value={draft.name}
            w={160}
            onChange={(e) => setDraft({ ...draft, name: e.currentTarget.value })}
            error={problem?.fieldMessage("name")}
          />
          <Select
            label="Lane"
            w={90}
            allowDeselect={false}
            data={slice.lanes.map(String)}
            value={String(draft.lane)}
            onChange={(v) => v !== null && setDraft({ ...draft, lane: Number(v) })}
            error={problem?.fieldMessage("lane")}
          />
          <NumberInput
            label="Dst port from"
            w={120}
            {...NO_CLAMP}
            value={draft.portLo}
            onChange={(v) => setDraft({ ...draft, portLo: v })}
            error={draftError ?? problem?.fieldMessage("dst_ports")}
          />
          <NumberInput
            label="to"
            w={120}
            {...NO_CLAMP}
            value={draft.portHi}
            onChange={(v) => setDraft({ ...draft, portHi: v })}
            error={draftError ? true : undefined}
          />
          <TextInput
            label="DSCP"
            w={100}
            value={draft.dscp}
            onChange={(e) => setDraft({ ...draft, dscp: e.currentTarget.value })}
            error={problem?.fieldMessage("dscp")}
          />
          <Button type="submit" variant="light" loading={add.isPending} disabled={draftError !== undefined}>
            Add service
          </Button>
        </Group>
      </form>
    </Stack>
  );
}
