// The slice-type catalogue (seed 000 Table 1): each type's lanes drawn against the 8 priority lanes.
import { Badge, Group, Table, Text } from "@mantine/core";
import { LaneStrip } from "../common/LaneStrip";
import { PageTitle } from "../common/PageTitle";
import { QueryView } from "../common/QueryView";
import { useSliceTypes } from "./queries";

export function CataloguePage() {
  const types = useSliceTypes();
  return (
    <>
      <PageTitle>Slice-type catalogue</PageTitle>
      <Text c="dimmed" mb="md" size="sm">
        Every slice type maps its traffic classes onto some of the 8 priority lanes (0 lowest, 7 highest).
      </Text>
      <QueryView query={types}>
        {(page) => (
          <Table.ScrollContainer minWidth={640}>
            <Table striped highlightOnHover aria-label="Slice types">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Slice type</Table.Th>
                  <Table.Th>Traffic classes</Table.Th>
                  <Table.Th>Lanes (0–7)</Table.Th>
                  <Table.Th>Use cases</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {page.data.map((t) => (
                  <Table.Tr key={t.id}>
                    {/* a type's name on one line (the table scrolls at 390 px instead of wrapping it a word a line) */}
                    <Table.Td fw={600} style={{ whiteSpace: "nowrap" }}>
                      {t.name}
                    </Table.Td>
                    <Table.Td>{t.traffic_classes}</Table.Td>
                    <Table.Td>
                      <LaneStrip lanes={t.lanes} label={t.name} />
                    </Table.Td>
                    <Table.Td>
                      <Group gap={4}>
                        {t.use_cases.map((u) => (
                          <Badge key={u} variant="light">
                            {u}
                          </Badge>
                        ))}
                      </Group>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
      </QueryView>
    </>
  );
}
