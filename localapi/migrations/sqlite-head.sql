-- A new SQLite metadata database at this revision is made with these statements, without Alembic
-- (localapi/core/db.py). Written by `python -m localapi.core.migrate`; do not edit by hand.
-- revision: 0002_preset_owner

CREATE TABLE alembic_version (
	version_num VARCHAR(32) NOT NULL, 
	CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);

CREATE TABLE bells (
	id TEXT NOT NULL, 
	host TEXT NOT NULL, 
	port INTEGER NOT NULL, 
	kinds TEXT NOT NULL, 
	updated_at DOUBLE NOT NULL, 
	PRIMARY KEY (id)
);

CREATE TABLE files (
	id TEXT NOT NULL, 
	key_id TEXT, 
	original_name TEXT NOT NULL, 
	mime_type TEXT NOT NULL, 
	format TEXT, 
	size_bytes BIGINT NOT NULL, 
	sha256 TEXT, 
	kind TEXT NOT NULL, 
	job_id TEXT, 
	created_at DOUBLE NOT NULL, 
	expires_at DOUBLE NOT NULL, 
	deleted_at DOUBLE, 
	PRIMARY KEY (id)
);

CREATE TABLE idempotency (
	key_id TEXT NOT NULL, 
	idem_key TEXT NOT NULL, 
	request_hash TEXT, 
	state TEXT NOT NULL, 
	status_code INTEGER, 
	body TEXT, 
	created_at DOUBLE NOT NULL, 
	owner TEXT, 
	heartbeat_at DOUBLE, 
	PRIMARY KEY (key_id, idem_key)
);

CREATE TABLE job_events (
	seq INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, 
	job_id TEXT NOT NULL, 
	key_id TEXT, 
	type TEXT NOT NULL, 
	job TEXT NOT NULL, 
	created_at DOUBLE NOT NULL
);

CREATE TABLE jobs (
	id TEXT NOT NULL, 
	key_id TEXT, 
	tool TEXT NOT NULL, 
	status TEXT NOT NULL, 
	progress INTEGER DEFAULT '0' NOT NULL, 
	output_format TEXT, 
	params TEXT NOT NULL, 
	input_file_ids TEXT NOT NULL, 
	result_file_ids TEXT DEFAULT '[]' NOT NULL, 
	bundle_file_id TEXT, 
	error_code TEXT, 
	error_message TEXT, 
	notes TEXT DEFAULT '[]' NOT NULL, 
	created_at DOUBLE NOT NULL, 
	started_at DOUBLE, 
	finished_at DOUBLE, 
	updated_at DOUBLE NOT NULL, 
	attempts INTEGER DEFAULT '0' NOT NULL, 
	worker TEXT, 
	heartbeat_at DOUBLE, 
	child_pid INTEGER, 
	webhook_url TEXT, 
	secret_params TEXT, 
	tag TEXT, 
	workflow_id TEXT, 
	step INTEGER, 
	PRIMARY KEY (id)
);

CREATE TABLE keys (
	id TEXT NOT NULL, 
	name TEXT NOT NULL, 
	prefix TEXT NOT NULL, 
	secret_hash TEXT NOT NULL, 
	created_at DOUBLE NOT NULL, 
	last_used_at DOUBLE, 
	revoked_at DOUBLE, 
	daily_job_quota INTEGER, 
	PRIMARY KEY (id), 
	UNIQUE (secret_hash)
);

CREATE TABLE presets (
	name TEXT NOT NULL, 
	description TEXT DEFAULT '' NOT NULL, 
	steps TEXT NOT NULL, 
	created_at DOUBLE NOT NULL, 
	updated_at DOUBLE NOT NULL, key_id TEXT, 
	PRIMARY KEY (name)
);

CREATE TABLE settings (
	name TEXT NOT NULL, 
	value TEXT NOT NULL, 
	PRIMARY KEY (name)
);

CREATE TABLE usage (
	key_id TEXT NOT NULL, 
	day TEXT NOT NULL, 
	jobs INTEGER NOT NULL, 
	PRIMARY KEY (key_id, day)
);

CREATE TABLE watch_folders (
	id TEXT NOT NULL, 
	in_dir TEXT NOT NULL, 
	out_dir TEXT NOT NULL, 
	preset TEXT NOT NULL, 
	recursive INTEGER DEFAULT '0' NOT NULL, 
	"after" TEXT DEFAULT 'keep' NOT NULL, 
	paused INTEGER DEFAULT '0' NOT NULL, 
	created_at DOUBLE NOT NULL, 
	last_activity_at DOUBLE, 
	last_error TEXT, 
	PRIMARY KEY (id), 
	UNIQUE (in_dir, out_dir)
);

CREATE TABLE watched_files (
	id INTEGER NOT NULL, 
	folder_id TEXT NOT NULL, 
	rel_path TEXT NOT NULL, 
	size BIGINT NOT NULL, 
	mtime_ns BIGINT NOT NULL, 
	sha256 TEXT NOT NULL, 
	status TEXT NOT NULL, 
	workflow_id TEXT, 
	taken_at DOUBLE NOT NULL, 
	finished_at DOUBLE, 
	message TEXT, 
	PRIMARY KEY (id), 
	UNIQUE (folder_id, rel_path, size, mtime_ns, sha256)
);

CREATE TABLE webhook_deliveries (
	id TEXT NOT NULL, 
	target TEXT NOT NULL, 
	event_seq BIGINT NOT NULL, 
	event_type TEXT NOT NULL, 
	job_id TEXT NOT NULL, 
	key_id TEXT, 
	url TEXT NOT NULL, 
	body TEXT NOT NULL, 
	status TEXT NOT NULL, 
	attempts INTEGER DEFAULT '0' NOT NULL, 
	next_attempt_at DOUBLE NOT NULL, 
	last_status INTEGER, 
	last_error TEXT, 
	created_at DOUBLE NOT NULL, 
	finished_at DOUBLE, 
	PRIMARY KEY (id), 
	UNIQUE (target, event_seq)
);

CREATE TABLE webhook_job_secrets (
	key_id TEXT NOT NULL, 
	secret TEXT NOT NULL, 
	created_at DOUBLE NOT NULL, 
	PRIMARY KEY (key_id)
);

CREATE TABLE webhooks (
	id TEXT NOT NULL, 
	key_id TEXT NOT NULL, 
	url TEXT NOT NULL, 
	events TEXT NOT NULL, 
	secret TEXT NOT NULL, 
	created_at DOUBLE NOT NULL, 
	disabled_at DOUBLE, 
	disabled_reason TEXT, 
	PRIMARY KEY (id)
);

CREATE TABLE workers (
	id TEXT NOT NULL, 
	host TEXT NOT NULL, 
	pid INTEGER NOT NULL, 
	slots INTEGER NOT NULL, 
	started_at DOUBLE NOT NULL, 
	heartbeat_at DOUBLE NOT NULL, 
	tools TEXT DEFAULT '[]' NOT NULL, 
	partial TEXT DEFAULT '[]' NOT NULL, 
	PRIMARY KEY (id)
);

CREATE TABLE workflows (
	id TEXT NOT NULL, 
	key_id TEXT, 
	status TEXT NOT NULL, 
	progress INTEGER DEFAULT '0' NOT NULL, 
	steps TEXT NOT NULL, 
	secret_steps TEXT, 
	preset TEXT, 
	tag TEXT, 
	webhook_url TEXT, 
	input_file_ids TEXT NOT NULL, 
	current_step INTEGER DEFAULT '0' NOT NULL, 
	result_file_ids TEXT DEFAULT '[]' NOT NULL, 
	bundle_file_id TEXT, 
	error_code TEXT, 
	error_message TEXT, 
	error_step INTEGER, 
	created_at DOUBLE NOT NULL, 
	started_at DOUBLE, 
	finished_at DOUBLE, 
	updated_at DOUBLE NOT NULL, 
	PRIMARY KEY (id)
);

CREATE INDEX files_expiry ON files (expires_at) WHERE deleted_at IS NULL;

CREATE INDEX job_events_created ON job_events (created_at);

CREATE INDEX job_events_job ON job_events (job_id, seq);

CREATE INDEX job_events_key ON job_events (key_id, seq);

CREATE INDEX jobs_key_created ON jobs (key_id, created_at, id);

CREATE INDEX jobs_key_status_created ON jobs (key_id, status, created_at, id);

CREATE INDEX jobs_key_tag_created ON jobs (key_id, tag, created_at, id) WHERE tag IS NOT NULL;

CREATE INDEX jobs_status_created ON jobs (status, created_at, id);

CREATE INDEX jobs_status_key_created ON jobs (status, key_id, created_at, id);

CREATE INDEX jobs_workflow ON jobs (workflow_id, step) WHERE workflow_id IS NOT NULL;

CREATE INDEX watched_files_status ON watched_files (folder_id, status);

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);

CREATE INDEX webhooks_key ON webhooks (key_id, created_at);

CREATE INDEX workflows_key_created ON workflows (key_id, created_at, id);

CREATE INDEX workflows_status ON workflows (status);

