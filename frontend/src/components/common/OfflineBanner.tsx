// Shown while the API cannot be reached (pinned to the window's bottom edge): says so, counts down to the next automatic retry, and
// offers to retry now. Pages keep their last data underneath.
import { useEffect, useState } from "react";
import { Alert, Button, Group, Text } from "@mantine/core";
import { connectivity, probe, subscribeConnectivity, type Connectivity } from "./connectivity";

export function OfflineBanner() {
  const [c, setC] = useState<Connectivity>(connectivity());
  const [now, setNow] = useState(Date.now());
  useEffect(() => subscribeConnectivity(setC), []);
  useEffect(() => {
    if (c.state !== "offline") return;
    const t = window.setInterval(() => setNow(Date.now()), 1000);
    return () => window.clearInterval(t);
  }, [c.state]);
  useEffect(() => {
    const back = () => void probe();
    window.addEventListener("online", back);
    return () => window.removeEventListener("online", back);
  }, []);
  // While shown, the page keeps room below its content for the banner, so nothing stays hidden.
  useEffect(() => {
    if (c.state === "online") return;
    const before = document.body.style.paddingBottom;
    document.body.style.paddingBottom = "96px";
    return () => {
      document.body.style.paddingBottom = before;
    };
  }, [c.state]);
  if (c.state === "online") return null;
  const seconds = Math.max(0, Math.ceil((c.nextProbeAt - now) / 1000));
  return (
    <Alert
      color="orange"
      title="The portal cannot reach the API"
      role="alert"
      data-testid="offline-banner"
      // pinned to the bottom of the window: over the header it would hide the menu and the
      // first navigation item, the very things one uses while waiting
      style={{ position: "fixed", bottom: 0, left: 0, right: 0, zIndex: 300 }}
      radius={0}>
      <Group justify="space-between" wrap="wrap" gap="xs">
        <Text size="sm">What you see may be out of date; changes cannot be saved. Retrying in {seconds} s.</Text>
        <Button size="xs" variant="white" color="orange" onClick={() => void probe()}>
          Retry now
        </Button>
      </Group>
    </Alert>
  );
}
