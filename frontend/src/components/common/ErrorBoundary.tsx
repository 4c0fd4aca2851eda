// A page that throws while rendering shows what happened and a way on, not a white page. The
// boundary resets when the user navigates (resetKey = the location), so one broken page does
// not take the rest of the portal with it.
import { Component, type ErrorInfo, type ReactNode } from "react";
import { Alert, Button, Code, Group, Stack, Text } from "@mantine/core";

interface Props {
  children: ReactNode;
  resetKey?: string;
}

interface State {
  error: Error | null;
  key: string | undefined;
}

export class ErrorBoundary extends Component<Props, State> {
  state: State = { error: null, key: this.props.resetKey };

  static getDerivedStateFromError(error: Error): Partial<State> {
    return { error };
  }

  static getDerivedStateFromProps(props: Props, state: State): Partial<State> | null {
    return props.resetKey !== state.key ? { error: null, key: props.resetKey } : null;
  }

  componentDidCatch(error: Error, info: ErrorInfo): void {
    console.error("page crashed", error, info.componentStack);
  }

  render() {
    const { error } = this.state;
    if (!error) return this.props.children;
    return (
      <Stack p="md">
        <Alert color="red" title="This page stopped working">
          <Text size="sm">Nothing you saved is lost. Reload the page, or go to another page from the menu.</Text>
          <Code block mt="xs">
            {error.message}
          </Code>
        </Alert>
        <Group>
          <Button onClick={() => window.location.reload()}>Reload</Button>
          <Button variant="default" onClick={() => this.setState({ error: null })}>
            Try again
          </Button>
        </Group>
      </Stack>
    );
  }
}
