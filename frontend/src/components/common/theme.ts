// The portal's Mantine theme. "dimmed" text is darkened so secondary text keeps WCAG AA contrast
// (4.5:1) on white and on the striped table rows; Mantine's default gray-6 falls short.
import { createTheme } from "@mantine/core";

export const theme = createTheme({
  primaryShade: { light: 8, dark: 8 },
  other: {},
});

export const cssVariablesResolver = () => ({
  variables: {},
  light: { "--mantine-color-dimmed": "var(--mantine-color-gray-7)" },
  dark: {},
});
