// The slice-type catalogue (seed 000 Table 1): each type's lanes drawn against the 8 priority lanes.
import { Badge, Group, Text } from "@mantine/core";
import type { Schemas } from "../../api/client";
import { DataTable, type Column } from "../common/DataTable";
import { LaneStrip } from "../common/LaneStrip";
import { PageTitle } from "../common/PageTitle";
import { useSliceTypes } from "./queries";

const COLUMNS: Column<Schemas["SliceTypePublic"]>[] = [
  // a type's name on one line (the table scrolls at 390 px instead of wrapping it a word a line)
  { key: "name", header: "Slice type", cell: (t) => t.name, td: { fw: 600, style: { whiteSpace: "nowrap" } } },
  { key: "traffic_classes", header: "Traffic classes", cell: (t) => t.traffic_classes },
  { key: "lanes", header: "Lanes (0–7)", cell: (t) => <LaneStrip lanes={t.lanes} label={t.name} /> },
  {
    key: "use_cases",
    header: "Use cases",
    cell: (t) => (
      <Group gap={4}>
        {t.use_cases.map((u) => (
          <Badge key={u} variant="light">
            {u}
          </Badge>
        ))}
      </Group>
    ),
  },
];

export function CataloguePage() {
  const types = useSliceTypes();
  return (
    <>
      <PageTitle>Slice-type catalogue</PageTitle>
      <Text c="dimmed" mb="md" size="sm">
        Every slice type maps its traffic classes onto some of the 8 priority lanes (0 lowest, 7 highest).
      </Text>
      <DataTable
        label="Slice types"
        query={types}
        rowKey={(t) => t.id}
        minWidth={640}
        highlightOnHover
        columns={COLUMNS}
      />
    </>
  );
}
