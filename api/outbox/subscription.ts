import type { EventType } from "./event-types.js";

/** `["*"]`: every event type, including types added later. */
export const ALL_EVENTS = "*";
export type EventSubscription = EventType[] | [typeof ALL_EVENTS];

/** `events_json` of a webhook endpoint, as stored. */
export function parseSubscription(eventsJson: string): EventSubscription {
  return JSON.parse(eventsJson) as EventSubscription;
}

export function subscribesTo(eventsJson: string, type: string): boolean {
  const events = parseSubscription(eventsJson) as string[];
  return events.includes(ALL_EVENTS) || events.includes(type);
}
