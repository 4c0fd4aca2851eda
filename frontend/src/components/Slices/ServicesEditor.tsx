// Services of a slice and their lane mapping; only the slice type's lanes can be chosen. Ports are
// kept as typed (never clamped) and explained when out of range.
import { ActionIcon, Button, Group, NumberInput, Select, Stack, Table, TextInput } from "@mantine/core";
import { NO_CLAMP, rangeError } from "../common/numberRange";

export interface ServiceDraft {
  name: string;
  lane: number;
  portLo: number | string; // as typed: "" (any port), a number, or something to explain
  portHi: number | string;
  dscp: string; // comma-separated 0-63
  protocol: "any" | "udp" | "tcp";
}

export function parseDscp(text: string): number[] {
  return text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map(Number);
}

/** What is wrong with a service's ports as typed, or undefined. */
export function portError(s: Pick<ServiceDraft, "portLo" | "portHi">, what = "Port"): string | undefined {
  const lo = rangeError(`First ${what.toLowerCase()}`, s.portLo, 0, 65535);
  if (lo) return lo;
  const hi = rangeError(`Last ${what.toLowerCase()}`, s.portHi, 0, 65535);
  if (hi) return hi;
  if (s.portHi !== "" && s.portLo === "") return "Give the first port too (or clear the last one for any port).";
  if (s.portHi !== "" && Number(s.portHi) < Number(s.portLo)) {
    return `The last port ${s.portHi} is below the first port ${s.portLo}.`;
  }
  return undefined;
}

/** The first problem of a list of services, for the wizard's "Next", or undefined. */
export function servicesError(services: ServiceDraft[]): string | undefined {
  for (const [i, s] of services.entries()) {
    if (s.name.trim() === "") return `Service ${i + 1} needs a name.`;
    const ports = portError(s);
    if (ports) return `Service ${i + 1}: ${ports}`;
  }
  return undefined;
}

export function toServiceCreate(s: ServiceDraft) {
  const ports = s.portLo === "" ? [] : [{ lo: Number(s.portLo), hi: Number(s.portHi === "" ? s.portLo : s.portHi) }];
  return { name: s.name, lane: s.lane, dst_ports: ports, dscp: parseDscp(s.dscp), protocol: s.protocol };
}

export function ServicesEditor({
  lanes,
  value,
  onChange,
  error,
}: {
  lanes: number[];
  value: ServiceDraft[];
  onChange: (next: ServiceDraft[]) => void;
  error: (field: string) => string | undefined;
}) {
  const set = (i: number, patch: Partial<ServiceDraft>) =>
    onChange(value.map((s, j) => (j === i ? { ...s, ...patch } : s)));
  return (
    <Stack>
      <Table.ScrollContainer minWidth={640}>
        <Table aria-label="Services">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Service</Table.Th>
              <Table.Th>Lane</Table.Th>
              <Table.Th>Dst port from</Table.Th>
              <Table.Th>to</Table.Th>
              <Table.Th>DSCP</Table.Th>
              <Table.Th>Protocol</Table.Th>
              <Table.Th />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {value.map((s, i) => (
              <Table.Tr key={i}>
                <Table.Td>
                  <TextInput
                    aria-label={`Service ${i + 1} name`}
                    value={s.name}
                    required
                    onChange={(e) => set(i, { name: e.currentTarget.value })}
                    error={error(`services.${i}.name`)}
                  />
                </Table.Td>
                <Table.Td>
                  <Select
                    aria-label={`Service ${i + 1} lane`}
                    w={90}
                    allowDeselect={false}
                    data={lanes.map((l) => ({ value: String(l), label: String(l) }))}
                    value={String(s.lane)}
                    onChange={(v) => v !== null && set(i, { lane: Number(v) })}
                    error={error(`services.${i}.lane`)}
                  />
                </Table.Td>
                <Table.Td>
                  <NumberInput
                    aria-label={`Service ${i + 1} first port`}
                    w={110}
                    {...NO_CLAMP}
                    value={s.portLo}
                    onChange={(v) => set(i, { portLo: v })}
                    error={portError(s) ?? error(`services.${i}.dst_ports`) ?? error(`services.${i}.dst_ports.0.lo`)}
                  />
                </Table.Td>
                <Table.Td>
                  <NumberInput
                    aria-label={`Service ${i + 1} last port`}
                    w={110}
                    {...NO_CLAMP}
                    value={s.portHi}
                    onChange={(v) => set(i, { portHi: v })}
                    error={portError(s) ? true : error(`services.${i}.dst_ports.0.hi`)}
                  />
                </Table.Td>
                <Table.Td>
                  <TextInput
                    aria-label={`Service ${i + 1} DSCP values`}
                    w={110}
                    placeholder="e.g. 46"
                    value={s.dscp}
                    onChange={(e) => set(i, { dscp: e.currentTarget.value })}
                    error={error(`services.${i}.dscp`)}
                  />
                </Table.Td>
                <Table.Td>
                  <Select
                    aria-label={`Service ${i + 1} protocol`}
                    w={90}
                    allowDeselect={false}
                    data={["any", "udp", "tcp"]}
                    value={s.protocol}
                    onChange={(v) => (v === "any" || v === "udp" || v === "tcp") && set(i, { protocol: v })}
                  />
                </Table.Td>
                <Table.Td>
                  <ActionIcon
                    variant="subtle"
                    color="red"
                    aria-label={`Remove service ${i + 1}`}
                    onClick={() => onChange(value.filter((_, j) => j !== i))}>
                    ✕
                  </ActionIcon>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      <Group>
        <Button
          variant="light"
          disabled={lanes.length === 0}
          onClick={() =>
            onChange([
              ...value,
              {
                name: `service-${value.length + 1}`,
                lane: lanes[value.length % lanes.length] ?? 0,
                portLo: "",
                portHi: "",
                dscp: "",
                protocol: "any",
              },
            ])
          }>
          Add service
        </Button>
      </Group>
    </Stack>
  );
}
