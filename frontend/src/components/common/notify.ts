// A tiny notification channel (no extra dependency): the shell renders what is pushed here.
export interface Note {
  id: number;
  title: string;
  message: string;
  color: string;
}

type Listener = (notes: Note[]) => void;
let notes: Note[] = [];
let nextId = 1;
const listeners = new Set<Listener>();

export function notify(title: string, message: string, color = "blue"): void {
  const note = { id: nextId++, title, message, color };
  notes = [...notes, note].slice(-4);
  listeners.forEach((l) => l(notes));
  window.setTimeout(() => dismiss(note.id), 6000);
}

export function dismiss(id: number): void {
  notes = notes.filter((n) => n.id !== id);
  listeners.forEach((l) => l(notes));
}

export function subscribeNotes(l: Listener): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}
