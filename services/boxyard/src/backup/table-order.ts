// The order to load tables in: every table after the tables it references, so foreign keys hold row by row.
// A table referencing itself (a tree) is loaded in one COPY, whose checks run at the end of the statement.

export function loadOrder(tables: readonly string[], references: readonly { table: string; references: string }[]): string[] {
  const pending = new Set(tables);
  const needs = new Map(tables.map((t) => [t, new Set<string>()]));
  for (const { table, references: target } of references) {
    if (table !== target && pending.has(table) && pending.has(target)) needs.get(table)!.add(target);
  }
  const order: string[] = [];
  while (pending.size > 0) {
    // Alphabetical among the ready ones: the same schema always gives the same order.
    const ready = [...pending].filter((t) => [...needs.get(t)!].every((n) => !pending.has(n))).sort();
    if (ready.length === 0) throw new Error(`foreign keys form a cycle between ${[...pending].sort().join(', ')}`);
    for (const table of ready) {
      order.push(table);
      pending.delete(table);
    }
  }
  return order;
}
