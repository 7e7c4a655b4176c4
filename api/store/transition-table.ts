/**
 * A record's legal state changes, declared as data, in the one form every record module
 * uses: each named transition lists the states it may start from, the state it ends in,
 * in words the extra condition its guarded UPDATE checks, and optionally two pure steps:
 * `refuse` (why this input may not make the move) and `set` (the columns the move writes
 * beside its status). `planMove` is the one mover that reads a table; each record module
 * runs the guarded UPDATE it plans (its key and its race guard are its own).
 * docs/architecture.md prints every table; test/unit/architecture-doc.test.ts keeps it true.
 */
// biome-ignore lint/suspicious/noExplicitAny: a table's steps each take their own input; the module's mover types them (`InputOf`).
type Any = any;

export type TransitionRule<state extends string, subject = Any, input = Any, row = Any> = {
  from: readonly state[];
  to: state;
  /** What the guarded UPDATE checks beside `status IN from`, for the reader. */
  guard?: string;
  /** Why the move is refused with this input, or undefined when it is allowed (pure: no store). */
  refuse?: (input: input, subject: subject, now: number) => string | undefined;
  /** The columns the move sets besides `status` and `updated_at`. */
  set?: (input: input, subject: subject, now: number) => Partial<row>;
};

export type TransitionTable<state extends string, name extends string = string, row = Any> = Readonly<
  Record<name, TransitionRule<state, Any, Any, row>>
>;

type ParameterOf<step> = step extends (input: infer input, ...rest: Any[]) => unknown ? input : unknown;

/** What a transition's `refuse` and `set` steps read: the mover's `input` for that transition. */
export type InputOf<rule> = (rule extends { refuse: infer step } ? ParameterOf<step> : unknown) &
  (rule extends { set: infer step } ? ParameterOf<step> : unknown);

/** A mover's `input` field for one transition: required when its steps read one, absent otherwise. */
export type InputField<rule> = unknown extends InputOf<rule> ? { input?: undefined } : { input: InputOf<rule> };

/** A code path asked for a state change its record's table does not allow: a defect, never a user error. */
export class TransitionRefused extends Error {
  constructor(
    readonly record: string,
    readonly transition: string,
    readonly from: string,
  ) {
    super(`${record}: transition "${transition}" is not allowed from "${from}"`);
    this.name = "TransitionRefused";
  }
}

/** Whether `transition` may start from `current`. */
export function allows<state extends string, name extends string>(
  table: TransitionTable<state, name>,
  transition: name,
  current: state,
): boolean {
  return table[transition].from.includes(current);
}

/** The rule of `transition` when it may start from `current`; throws `TransitionRefused` otherwise. */
export function ruleFor<state extends string, name extends string>(
  record: string,
  table: TransitionTable<state, name>,
  transition: name,
  current: state,
): TransitionRule<state> {
  if (!allows(table, transition, current)) throw new TransitionRefused(record, transition, current);
  return table[transition];
}

/** Why `transition` refuses this input (its `refuse` step; undefined when it has none or allows it). */
export function refusal<state extends string, name extends string>(
  table: TransitionTable<state, name>,
  transition: name,
  at: { input?: unknown; subject?: unknown; now: number },
): string | undefined {
  return table[transition].refuse?.(at.input, at.subject, at.now);
}

export type PlannedMove<state extends string, row> =
  | { refused: string }
  | { refused: undefined; from: readonly state[]; to: state; set: Partial<row> };

/**
 * The one mover: checks the table against the status read (`TransitionRefused` for a
 * change it does not list), then the transition's `refuse` step, and answers the
 * columns to write (the `set` step's, without `status` and `updated_at`) or the refusal.
 * `current` undefined is for a record moved by `status IN from` without reading it first.
 */
export function planMove<state extends string, name extends string, row = Record<string, unknown>>(
  record: string,
  table: TransitionTable<state, name, row>,
  transition: name,
  at: { current: state | undefined; input?: unknown; subject?: unknown; now: number },
): PlannedMove<state, row> {
  const rule = at.current === undefined ? table[transition] : ruleFor(record, table, transition, at.current);
  const refused = refusal(table, transition, at);
  if (refused !== undefined) return { refused };
  return {
    refused: undefined,
    from: rule.from,
    to: rule.to,
    set: (rule.set?.(at.input, at.subject, at.now) ?? {}) as Partial<row>,
  };
}

/** Every (from, to) pair a table allows, for docs and tests. */
export function edges<state extends string, name extends string>(
  table: TransitionTable<state, name>,
): { transition: name; from: state; to: state; guard?: string }[] {
  return (Object.keys(table) as name[]).flatMap((transition) => {
    const rule = table[transition];
    return rule.from.map((from) => ({ transition, from, to: rule.to, ...(rule.guard ? { guard: rule.guard } : {}) }));
  });
}
