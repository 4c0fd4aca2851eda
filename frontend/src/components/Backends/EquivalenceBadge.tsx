// Whether the plan the preview shows classifies every key exactly as the compiled IR
// (issue #20; docs/packets.md "Rule-set equivalence"): proven by the backend's exact walk,
// differs (with the key that shows it and both verdicts), or unchecked (with why).
import { Alert, Badge, Group, Table, Text } from "@mantine/core";
import type { Schemas } from "../../api/client";

type Equivalence = Schemas["EquivalencePublic"];

const ADDRESS_FIELDS = new Set(["src_ip", "dst_ip"]);

function ipv4(n: number): string {
  return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join(".");
}

/** The counterexample key as a reader checks it: addresses dotted, absent tunnel headers named. */
export function keyRows(key: Record<string, number>): [string, string][] {
  const rows: [string, string][] = [];
  for (const [name, value] of Object.entries(key)) {
    if (name.startsWith("has_")) continue;
    const present = key[`has_${name}`];
    if (present === 0) rows.push([name, "absent"]);
    else rows.push([name, ADDRESS_FIELDS.has(name) ? ipv4(value) : String(value)]);
  }
  return rows;
}

function summary(e: Equivalence): string {
  const how =
    `${e.method.startsWith("exact") ? "exact walk" : e.method}, ${e.checked_entries} entries, `
    + `${Math.round(e.elapsed_ms)} ms`;
  if (e.verdict === "proven") return `Equivalent to the IR: proven (${how})`;
  if (e.verdict === "differs") return `Differs from the IR (${how})`;
  return "Equivalence to the IR: unchecked";
}

const COLOR = { proven: "green", differs: "red", unchecked: "gray" } as const;

export function EquivalenceBadge({ equivalence }: { equivalence: Equivalence | null | undefined }) {
  if (!equivalence) {
    return (
      <Text size="sm" c="dimmed" data-testid="equivalence">
        Equivalence to the IR: not computed for this preview
      </Text>
    );
  }
  const e = equivalence;
  return (
    <div data-testid="equivalence">
      <Group gap="xs">
        <Badge color={COLOR[e.verdict]} variant="light">
          {e.verdict}
        </Badge>
        <Text size="sm" title={e.detail}>
          {summary(e)}
        </Text>
      </Group>
      {e.verdict === "unchecked" && (
        <Text size="sm" c="dimmed">
          {e.detail}
        </Text>
      )}
      {e.verdict === "differs" && e.counterexample && (
        <Alert color="red" mt="xs" title="A key the plan classifies differently from the IR">
          <Table withRowBorders={false} aria-label="Counterexample key" w="auto">
            <Table.Tbody>
              {keyRows(e.counterexample.key).map(([name, value]) => (
                <Table.Tr key={name}>
                  <Table.Td>{name}</Table.Td>
                  <Table.Td>
                    <code>{value}</code>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          <Text size="sm">IR: {e.counterexample.ir}</Text>
          <Text size="sm">Plan: {e.counterexample.plane}</Text>
        </Alert>
      )}
    </div>
  );
}
