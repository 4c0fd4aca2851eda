// Mantine's Modal with a named close button (an icon-only button needs an accessible name).
import { Modal, type ModalProps } from "@mantine/core";

export function Dialog({ title, ...props }: ModalProps & { title: string }) {
  return <Modal title={title} closeButtonProps={{ "aria-label": `Close “${title}”` }} {...props} />;
}
