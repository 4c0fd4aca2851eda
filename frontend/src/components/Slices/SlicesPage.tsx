import { Button, Group, Select, TextInput } from "@mantine/core";
import { Link } from "react-router";
import { useSession } from "../../auth/session";
import type { Schemas } from "../../api/client";
import { DataTable, RowLink, type Column } from "../common/DataTable";
import { LaneStrip } from "../common/LaneStrip";
import { PageTitle } from "../common/PageTitle";
import { searchField, tablePaging, usePageParams, useUrlFilters } from "../common/usePaged";
import { useSlices } from "./queries";
import { BackendBadges, SLICE_STATES, type SliceState, StateBadge, stateLabel } from "./StateBadge";

const COLUMNS: Column<Schemas["SlicePublic"]>[] = [
  { key: "name", header: "Name", cell: (s) => <RowLink to={`/slices/${s.id}`}>{s.name}</RowLink> },
  { key: "type", header: "Type", cell: (s) => s.slice_type_name, td: { style: { whiteSpace: "nowrap" } } },
  { key: "lanes", header: "Lanes", cell: (s) => <LaneStrip lanes={s.lanes} label={s.name} /> },
  { key: "state", header: "State", cell: (s) => <StateBadge state={s.state} /> },
  {
    key: "backends",
    header: "Per backend",
    cell: (s) => <BackendBadges status={s.status} />,
    td: { miw: 260 },
  },
  {
    key: "rate_limit",
    header: "Rate limit",
    cell: (s) => (s.sla.rate_limit_mbps != null ? `${s.sla.rate_limit_mbps} Mbit/s` : "—"),
  },
  {
    key: "max_delay",
    header: "Max delay",
    cell: (s) => (s.sla.max_delay_ms != null ? `${s.sla.max_delay_ms} ms` : "—"),
  },
];

export function SlicesPage() {
  const { me } = useSession();
  const [params, setParams] = usePageParams({ sort: "name" });
  const [url, setFilter] = useUrlFilters();
  // validated: only a known state reaches the API
  const state = SLICE_STATES.find((s) => s === url.get("state")) ?? null;
  const slices = useSlices(params, (state ?? undefined) as SliceState | undefined);
  return (
    <>
      <PageTitle
        actions={
          me?.role === "operator" && (
            <Button component={Link} to="/slices/new">
              New slice
            </Button>
          )
        }>
        Slices
      </PageTitle>
      <Group mb="sm" align="end">
        <TextInput label="Search slices" maw={280} {...searchField(params, setParams)} />
        <Select
          label="State"
          clearable
          data={SLICE_STATES.map((s) => ({ value: s, label: stateLabel(s) }))}
          value={state}
          onChange={(v) => setFilter("state", v)}
          w={160}
        />
      </Group>
      {/* below this width the table scrolls inside its box: a type's name and a backend's
          badge stay on one line each (a phone squeezed them one word a line, #29) */}
      <DataTable
        label="Slices"
        query={slices}
        {...tablePaging(params, setParams)}
        rowKey={(s) => s.id}
        minWidth={980}
        highlightOnHover
        columns={COLUMNS}
      />
    </>
  );
}
