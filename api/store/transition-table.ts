/**
 * A record's legal state changes, declared as data: each named transition lists the
 * states it may start from, the state it ends in, and (in words) the extra condition
 * its guarded UPDATE checks. The record modules (api/checkout/session-record.ts,
 * api/payments/payment-record.ts, api/orders/order-record.ts,
 * api/purchases/purchase-record.ts) apply them; docs/architecture.md prints them.
 */
export type TransitionRule<state extends string> = {
  from: readonly state[];
  to: state;
  /** What the guarded UPDATE checks beside `status IN from`, for the reader. */
  guard?: string;
};

export type TransitionTable<state extends string, name extends string = string> = Readonly<Record<name, TransitionRule<state>>>;

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

/** Every (from, to) pair a table allows, for docs and tests. */
export function edges<state extends string, name extends string>(
  table: TransitionTable<state, name>,
): { transition: name; from: state; to: state; guard?: string }[] {
  return (Object.keys(table) as name[]).flatMap((transition) => {
    const rule = table[transition];
    return rule.from.map((from) => ({ transition, from, to: rule.to, ...(rule.guard ? { guard: rule.guard } : {}) }));
  });
}
