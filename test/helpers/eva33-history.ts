/** The state_history table as EVA ICS 3.3 creates it (SQLite and PostgreSQL alike), for tests and benchmarks that continue a 3.3 history. */
export const EVA33_SCHEMA = `
CREATE TABLE state_history (
	space VARCHAR(64) NOT NULL,
	t NUMERIC(20, 8) NOT NULL,
	oid VARCHAR(256) NOT NULL,
	status INTEGER,
	value VARCHAR(8192),
	PRIMARY KEY (space, t, oid)
);
CREATE INDEX i_t_oid ON state_history (space, t, oid);
CREATE INDEX i_oid ON state_history (space, oid);`;
