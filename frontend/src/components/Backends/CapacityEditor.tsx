// A backend's capacities, which admission control checks the slices on it against: the egress
// link (Σ guarantees and seed 004's worst-case delays) and each port's capacity (Σ guarantees of
// the slices bound to the port). Edited in Mbit/s, sent in bit/s; a refusal by admission control
// shows its numbers, and an operator may save anyway with a reason (audited).
import { useState } from "react";
import { ActionIcon, Button, Group, NumberInput, Stack, Table, Text, TextInput } from "@mantine/core";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, ApiProblem, unwrap, type Schemas } from "../../api/client";
import { notify } from "../common/notify";
import { ProblemAlert } from "../common/QueryView";
import { AdmissionDetails } from "../Slices/AdmissionDetails";
import { AdmissionOverride, overrideHeader } from "../Slices/AdmissionOverride";

type Backend = Schemas["BackendPublic"];

// The API's bounds (schemas/backends.py LinkBps / PortBps): 0 < bit/s <= 10^13, port names of
// 1-32 characters, at most 64 ports.
export const MAX_MBPS = 10_000_000;
export const MAX_PORTS = 64;
const PORT_NAME_MAX = 32;

export interface PortDraft {
  port: string;
  mbps: number | string;
}

/** What is wrong with a capacity in Mbit/s as typed, or undefined. */
export function capacityError(label: string, mbps: number | string): string | undefined {
  if (mbps === "") return `${label} is required.`;
  const n = Number(mbps);
  if (!Number.isFinite(n)) return `${label} must be a number.`;
  if (n <= 0) return `${label} must be above 0 Mbit/s; ${n} is not.`;
  if (n > MAX_MBPS) return `${label} must be at most ${MAX_MBPS} Mbit/s; ${n} is too large.`;
  if (Math.round(n * 1e6) < 1) return `${label} must be at least 1 bit/s.`;
  return undefined;
}

/** What is wrong with the port at ``i`` (its name, then its capacity), or undefined. */
export function portDraftError(ports: PortDraft[], i: number): { port?: string; mbps?: string } {
  const p = ports[i];
  if (!p) return {};
  const name = p.port.trim();
  const out: { port?: string; mbps?: string } = {};
  if (name === "") out.port = "Name the port (as the data plane numbers it, e.g. 3).";
  else if (name.length > PORT_NAME_MAX) out.port = `A port name has at most ${PORT_NAME_MAX} characters.`;
  else if (ports.findIndex((q) => q.port.trim() === name) !== i) out.port = `Port ${name} is listed twice.`;
  const e = capacityError(`Port ${name || i + 1} capacity`, p.mbps);
  if (e) out.mbps = e;
  return out;
}

const toBps = (mbps: number | string) => Math.round(Number(mbps) * 1e6);

/** Keyed by the backend's version by its page (a save reloads it); ``onOverridden``: an operator's
override was accepted (the page shows the audit entry, which outlives this form). */
export function CapacityEditor({
  backend,
  canOverride,
  onOverridden,
}: {
  backend: Backend;
  canOverride: boolean;
  onOverridden: () => void;
}) {
  const qc = useQueryClient();
  const [link, setLink] = useState<number | string>(backend.link_bps / 1e6);
  const [ports, setPorts] = useState<PortDraft[]>(
    Object.entries(backend.port_bps).map(([port, bps]) => ({ port, mbps: bps / 1e6 })),
  );
  const save = useMutation({
    mutationFn: (reason?: string) =>
      unwrap(
        api.PATCH("/api/v1/backends/{backend_id}", {
          params: { path: { backend_id: backend.id }, header: overrideHeader(reason) },
          body: {
            link_bps: toBps(link),
            version: backend.version,
            port_bps: Object.fromEntries(ports.map((p) => [p.port.trim(), toBps(p.mbps)])),
          },
        }),
      ),
    onSuccess: async (_data, reason) => {
      if (reason !== undefined) onOverridden();
      notify(
        "Capacities saved",
        `Backend ${backend.name}: admission control checks against the new capacities.`,
        "green",
      );
      await qc.invalidateQueries({ queryKey: ["backends"] });
      await qc.invalidateQueries({ queryKey: ["audit"] });
    },
  });
  const problem = save.error instanceof ApiProblem ? save.error : null;
  const linkError = capacityError("Link capacity", link);
  const portErrors = ports.map((_, i) => portDraftError(ports, i));
  const invalid = linkError !== undefined || portErrors.some((e) => e.port || e.mbps) || ports.length > MAX_PORTS;
  // the API names a port's field port_bps.<port> (422 and admission's 409 alike)
  const serverPortError = (port: string) =>
    problem?.errors
      .filter((e) => e.field.endsWith(`port_bps.${port.trim()}`))
      .map((e) => e.message)
      .join("; ") || undefined;
  const access = (backend.options.access_ports ?? {}) as Record<string, number>;
  const setPort = (i: number, next: Partial<PortDraft>) =>
    setPorts(ports.map((p, j) => (j === i ? { ...p, ...next } : p)));

  return (
    <Stack>
      {save.isError && <ProblemAlert error={save.error} shownOnFields={["link_bps", "port_bps"]} />}
      <form
        aria-label="Capacities"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          if (!invalid) save.mutate(undefined);
        }}>
        <Stack>
          <NumberInput
            label="Egress link capacity (Mbit/s)"
            w={260}
            clampBehavior="none"
            allowNegative
            decimalScale={6}
            value={link}
            onChange={setLink}
            error={linkError ?? problem?.fieldMessage("link_bps")}
            description="Σ guarantees and every lane's worst-case delay are checked against it"
          />
          <Table aria-label="Port capacities" maw={720}>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Port</Table.Th>
                <Table.Th>Capacity (Mbit/s)</Table.Th>
                <Table.Th>Carries</Table.Th>
                <Table.Th />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {ports.map((p, i) => (
                <Table.Tr key={i}>
                  <Table.Td>
                    <TextInput
                      aria-label={`Port ${i + 1} name`}
                      value={p.port}
                      w={120}
                      onChange={(e) => setPort(i, { port: e.currentTarget.value })}
                      error={portErrors[i]?.port}
                    />
                  </Table.Td>
                  <Table.Td>
                    <NumberInput
                      aria-label={`Port ${p.port || i + 1} capacity (Mbit/s)`}
                      w={300}
                      clampBehavior="none"
                      allowNegative
                      decimalScale={6}
                      value={p.mbps}
                      onChange={(v) => setPort(i, { mbps: v })}
                      error={portErrors[i]?.mbps ?? serverPortError(p.port)}
                    />
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm">
                      {p.port.trim() in access
                        ? `tenant VLAN ${access[p.port.trim()]} only (access port)`
                        : "every slice (shared)"}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <ActionIcon
                      variant="subtle"
                      color="red"
                      aria-label={`Remove port ${p.port || i + 1}`}
                      onClick={() => setPorts(ports.filter((_, j) => j !== i))}>
                      ✕
                    </ActionIcon>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          {ports.length === 0 && (
            <Text size="sm" c="dimmed">
              No port capacities: only the link limits the guarantees.
            </Text>
          )}
          <Group>
            <Button
              variant="default"
              disabled={ports.length >= MAX_PORTS}
              onClick={() => setPorts([...ports, { port: "", mbps: "" }])}>
              Add port
            </Button>
            <Button type="submit" loading={save.isPending} disabled={invalid}>
              Save capacities
            </Button>
          </Group>
        </Stack>
      </form>
      <AdmissionDetails problem={save.error} />
      <AdmissionOverride
        problem={save.error}
        canOverride={canOverride}
        pending={save.isPending}
        onOverride={(reason) => save.mutate(reason)}
      />
    </Stack>
  );
}
