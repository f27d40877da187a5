/**
 * The state history table (plugins/notifiers/README.md): the layout EVA ICS 3.3
 * history databases have, so existing readers and files keep working.
 */
export const HistorySchema = [
  `CREATE TABLE IF NOT EXISTS state_history (
     space VARCHAR(64) NOT NULL,
     t NUMERIC(20,8) NOT NULL,
     oid VARCHAR(256) NOT NULL,
     status INT(1),
     value VARCHAR(8192),
     PRIMARY KEY (space, t, oid))`,
  'CREATE INDEX IF NOT EXISTS i_t_oid ON state_history (space, t, oid)',
  'CREATE INDEX IF NOT EXISTS i_oid ON state_history (space, oid)',
];

/** One row as the main thread hands it to the history worker: space, t, oid, status, value (the history plugin's row). */
export type { HistoryRow } from '../../history/contract';
