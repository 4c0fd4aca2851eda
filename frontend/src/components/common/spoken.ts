// The portal never shows a raw API identifier: a name that no table of words knows is read out
// with its underscores as spaces ("queue_depth_pkts" → "queue depth pkts").
export function spoken(identifier: string): string {
  return identifier.replace(/_/g, " ");
}
