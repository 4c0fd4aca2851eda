// The intents of one slice (seed 001 Listing 1 messages and native ones, from the intent API):
// what each matches and does, who posted it; operators delete one after a confirmation that says
// the slice's backends are redeployed without it.
import { Badge, Code, Text } from "@mantine/core";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "../../api/client";
import { useConfirm } from "../common/Confirm";
import { DataTable, RowButton, type Column } from "../common/DataTable";
import { QueryView } from "../common/QueryView";
import { Time } from "../common/time";

type Match = Omit<Schemas["IntentMatch"], "dst_ports"> & { dst_ports: readonly (readonly number[])[] };
interface Intent {
  id: number;
  match: Match;
  action: Schemas["IntentAction"];
}

/** "IMSI 00101…, ports 5000–5007, DSCP 46" — every selector given must hold. */
export function matchWords(m: Match): string {
  const parts: string[] = [];
  if (m.imsis.length) parts.push(`IMSI ${m.imsis.join(", ")}`);
  if (m.ue_prefixes.length) parts.push(`UE ${m.ue_prefixes.join(", ")}`);
  if (m.teids.length) parts.push(`TEID ${m.teids.join(", ")}`);
  if (m.dst_ports.length)
    parts.push(
      `ports ${m.dst_ports.map(([lo, hi]) => (hi === undefined || lo === hi ? `${lo}` : `${lo}–${hi}`)).join(", ")}`,
    );
  if (m.dscp.length) parts.push(`DSCP ${m.dscp.join(", ")}`);
  if (m.protocol !== "any") parts.push(m.protocol.toUpperCase());
  return parts.join("; ") || "all traffic of the slice";
}

/** "prioritise to lane 6", "steer to RR path 2", "rate limit 5 Mbit/s", "drop". */
export function actionWords(a: Intent["action"]): string {
  switch (a.type) {
    case "prioritise":
      return a.lane != null ? `prioritise to lane ${a.lane}` : "prioritise";
    case "steer":
      return `steer to RR path ${a.rr_path ?? "?"}${a.lane != null ? `, lane ${a.lane}` : ""}`;
    case "rate_limit":
      return `rate limit ${a.rate_mbps ?? "?"} Mbit/s`;
    default:
      return a.type;
  }
}

export function SliceIntents({
  sliceId,
  sliceName,
  canDelete,
}: {
  sliceId: number;
  sliceName: string;
  canDelete: boolean;
}) {
  const qc = useQueryClient();
  const confirm = useConfirm();
  const intents = useQuery({
    queryKey: ["intents", { sliceId }],
    queryFn: () =>
      unwrap(api.GET("/api/v1/intents", { params: { query: { slice_id: sliceId, limit: 100, sort: "-id" } } })),
  });
  const askDelete = (it: Intent) =>
    confirm.ask({
      title: `Delete intent ${it.id} of slice ${sliceName}?`,
      message:
        `The intent (${matchWords(it.match)} → ${actionWords(it.action)}) is removed and the backends of `
        + `${sliceName} are redeployed at once: its flows fall back to the slice's own rules.`,
      confirmLabel: `Delete intent ${it.id}`,
      action: async () => {
        await unwrap(api.DELETE("/api/v1/intents/{intent_id}", { params: { path: { intent_id: it.id } } }));
        await Promise.all(
          ["intents", "deployments", "preview", "slices"].map((k) => qc.invalidateQueries({ queryKey: [k] })),
        );
      },
    });
  const deleteColumn: Column<Intent> = {
    key: "delete",
    header: "Delete",
    cell: (it) => (
      <RowButton label={`Delete intent ${it.id}`} danger onClick={() => askDelete(it)}>
        Delete
      </RowButton>
    ),
  };
  return (
    <QueryView query={intents} what="intents">
      {(page) =>
        page.count === 0 ? (
          <Text size="sm" c="dimmed">
            No intents: the slice's own rules decide.
          </Text>
        ) : (
          <>
            {confirm.dialog}
            <DataTable
              label="Intents"
              query={intents}
              rowKey={(it) => it.id}
              minWidth={640}
              columns={[
                { key: "id", header: "#", cell: (it) => it.id },
                { key: "match", header: "Matches", cell: (it) => <Code>{matchWords(it.match)}</Code> },
                { key: "action", header: "Action", cell: (it) => actionWords(it.action) },
                {
                  key: "format",
                  header: "Format",
                  cell: (it) => (
                    <Badge variant="light" color="gray">
                      {it.source_format === "listing1" ? "Listing 1" : "native"}
                    </Badge>
                  ),
                },
                { key: "owner", header: "By", cell: (it) => it.owner },
                { key: "created", header: "Created", cell: (it) => <Time value={it.created_at} /> },
                ...(canDelete ? [deleteColumn] : []),
              ]}
            />
            {page.count > page.data.length && (
              <Text size="xs" c="dimmed">
                The newest {page.data.length} of {page.count} are listed.
              </Text>
            )}
          </>
        )
      }
    </QueryView>
  );
}
