// The browser tab says which page is open: "<page> · sliceportal".
import { Children, isValidElement, useEffect, type ReactNode } from "react";

export const APP_NAME = "sliceportal";

/** The plain text of a title's children ("Backend ", name → "Backend edge-1"). */
export function textOf(node: ReactNode): string {
  let out = "";
  Children.forEach(node, (child) => {
    if (typeof child === "string" || typeof child === "number") out += String(child);
    else if (isValidElement<{ children?: ReactNode }>(child)) out += textOf(child.props.children);
  });
  return out.trim();
}

export function titleFor(page: string): string {
  return page ? `${page} · ${APP_NAME}` : APP_NAME;
}

export function useDocumentTitle(page: string): void {
  useEffect(() => {
    document.title = titleFor(page);
  }, [page]);
}
