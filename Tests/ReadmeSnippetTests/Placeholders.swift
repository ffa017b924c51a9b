// Names that README snippets leave to the reader, declared so the snippets compile as written.
// Keep this file to placeholders: a name a newcomer must define belongs in the snippet itself.
// The README's snippets currently leave no name to the reader.
