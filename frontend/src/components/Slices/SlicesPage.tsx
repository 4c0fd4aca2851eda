import { Anchor, Button, Group, Select, Table, TextInput } from "@mantine/core";
import { Link, useSearchParams } from "react-router";
import { useSession } from "../../auth/session";
import { LaneStrip } from "../common/LaneStrip";
import { PageTitle } from "../common/PageTitle";
import { Pager } from "../common/Pager";
import { QueryView } from "../common/QueryView";
import { usePageParams } from "../common/usePaged";
import { useSlices } from "./queries";
import { BackendBadges, SLICE_STATES, type SliceState, StateBadge, stateLabel } from "./StateBadge";

export function SlicesPage() {
  const { me } = useSession();
  const [params, setParams] = usePageParams({ sort: "name" });
  const [search, setSearch] = useSearchParams();
  const stateParam = search.get("state");
  const state = SLICE_STATES.find((s) => s === stateParam) ?? null;
  const setState = (v: string | null) => {
    // validated: only a known state reaches the API
    const next = new URLSearchParams(search);
    if (v) next.set("state", v);
    else next.delete("state");
    next.delete("page");
    setSearch(next, { replace: true });
  };
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
        <TextInput
          label="Search slices"
          maw={280}
          value={params.q}
          onChange={(e) => setParams({ q: e.currentTarget.value, page: 1 })}
        />
        <Select
          label="State"
          clearable
          data={SLICE_STATES.map((s) => ({ value: s, label: stateLabel(s) }))}
          value={state}
          onChange={setState}
          w={160}
        />
      </Group>
      <QueryView query={slices}>
        {(page) => (
          <>
            {/* below this width the table scrolls inside its box: a type's name and a backend's
                badge stay on one line each (a phone squeezed them one word a line, #29) */}
            <Table.ScrollContainer minWidth={980}>
              <Table striped highlightOnHover aria-label="Slices">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>Type</Table.Th>
                    <Table.Th>Lanes</Table.Th>
                    <Table.Th>State</Table.Th>
                    <Table.Th>Per backend</Table.Th>
                    <Table.Th>Rate limit</Table.Th>
                    <Table.Th>Max delay</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {page.data.map((s) => (
                    <Table.Tr key={s.id}>
                      <Table.Td>
                        <Anchor component={Link} to={`/slices/${s.id}`} fw={600}>
                          {s.name}
                        </Anchor>
                      </Table.Td>
                      <Table.Td style={{ whiteSpace: "nowrap" }}>{s.slice_type_name}</Table.Td>
                      <Table.Td>
                        <LaneStrip lanes={s.lanes} label={s.name} />
                      </Table.Td>
                      <Table.Td>
                        <StateBadge state={s.state} />
                      </Table.Td>
                      <Table.Td miw={260}>
                        <BackendBadges status={s.status} />
                      </Table.Td>
                      <Table.Td>{s.sla.rate_limit_mbps != null ? `${s.sla.rate_limit_mbps} Mbit/s` : "—"}</Table.Td>
                      <Table.Td>{s.sla.max_delay_ms != null ? `${s.sla.max_delay_ms} ms` : "—"}</Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            </Table.ScrollContainer>
            <Pager count={page.count} params={params} onPage={(p) => setParams({ page: p })} />
          </>
        )}
      </QueryView>
    </>
  );
}
