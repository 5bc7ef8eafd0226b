/**
 * Every `patched()` id the workflows branch on, each with the change it marks. A run
 * started before a change has no marker for it and replays the older branch; the recorded
 * histories (test/histories/, replayed by test/workflows/replay.test.ts) pin both sides. An id is
 * never reused or renamed: a history holds it as written.
 */

/** Attempt folders under `<parent>/<runId>/`; runs started before keep their folders. */
export const RUN_FOLDERS = 'run-folders';
/** One-table runs write a data package after their files. */
export const DATA_PACKAGE = 'data-package';
/** A discard that fails is recorded on its attempt; before, it failed the run. */
export const DISCARD_FAILURE_RECORDED = 'discard-failure-recorded';
/** A commit signal with keys a report does not have is refused; before, they were ignored. */
export const STRICT_COMMIT_SIGNAL = 'strict-commit-signal';
/** A load always ends in a decision (its report, or one made for it); runs started before used the legacy loader stub. */
export const LOAD_ALWAYS_DECIDES = 'load-always-decides';
/** A cancelled copy is waited for until it has stopped writing, so a discard never races its rename. */
export const WAIT_FOR_CANCELLED_COPIES = 'wait-for-cancelled-copies';
/** An attempt's folder is prepared while the snapshot is planned, uncancellably, and a failure waits for it. */
export const PREPARE_FOLDER_WHILE_PLANNING = 'prepare-folder-while-planning';
/** A copy that fails for good asks the holder to end its snapshot at once, not at its next heartbeat. */
export const RELEASE_HOLD_ON_FAILURE = 'release-hold-on-failure';
/** A copy that gave way to a migration (SNAPSHOT_LOST while the holder holds) asks the holder to end at once too. */
export const RELEASE_HOLD_ON_GIVE_WAY = 'release-hold-on-give-way';
/** A standby's recovery conflict while planning loses the snapshot (a fresh attempt), not the run. */
export const RECOVERY_CONFLICT_WHILE_PLANNING = 'recovery-conflict-while-planning';
/** A caller's fault met when the receipt completes fails the run; before, it was taken for a lost snapshot. */
export const CALLERS_FAULT_AT_COMPLETION = 'callers-fault-at-completion';
/** A discard waits for the attempt's folder to be made, so no marker lands after it. */
export const FOLDER_BEFORE_DISCARD = 'folder-before-discard';
/** The plan is awaited in the hold's scope. */
export const PLAN_WAIT_WITH_HOLD = 'plan-wait-with-hold';
/** A failure to reach the holder's queue waits for the folder's prepare before its discard. */
export const QUEUE_FAILURE_AFTER_FOLDER = 'queue-failure-after-folder';
/** A whole copy's folder is prepared uncancellably, as a held snapshot's is. */
export const WHOLE_COPY_FOLDER_BEFORE_DISCARD = 'whole-copy-folder-before-discard';
/** A partitioned run's data package is written while its receipt completes; before, after. */
export const PACKAGE_WHILE_COMPLETING = 'package-while-completing';
/** A data package written after its attempt (a whole copy's) is written on the stub that waits for a cancelled write. */
export const PACKAGE_WAITS_WHEN_CANCELLED = 'package-waits-when-cancelled';
/** Runs of several tables (`tables`, `schema`) at one snapshot. */
export const TABLE_SET = 'table-set';
/** A run of several tables loads each table into its mapped target table (loadTargetSet). */
export const TABLE_SET_LOAD = 'table-set-load';
/** Small tables of a set are copied in groups, one session each. */
export const TABLE_GROUPS = 'table-groups';
/** A set's file names are told apart in any case (a case-insensitive file system); before, as written. */
export const FILE_NAMES_ANY_CASE = 'file-names-any-case';
/** A set's data package, written while the snapshot is held. */
export const SET_DATA_PACKAGE = 'set-data-package';
/** A set's data package is written while the copy runs (it needs the plan and the snapshot's types, not the receipts). */
export const SET_DATA_PACKAGE_BESIDE_COPY = 'set-data-package-beside-copy';
/** A failed set attempt discards its outputs only once its copy has stopped. */
export const SET_SETTLES_AFTER_COPY = 'set-settles-after-copy';
/** A copy batch whose copy fails for good cancels its other copies at once. */
export const BATCH_STOPS_ON_FAILURE = 'batch-stops-on-failure';
/** The manifest and each step's result are weighed against Temporal's payload limit. */
export const PAYLOAD_BUDGET = 'payload-budget';
/** A set's plan is weighed against Temporal's payload limit. */
export const PLAN_BUDGET = 'plan-budget';
/** A cancellation once the outcome is decided neither fails the commit update nor cancels the run. */
export const DECIDED_BEFORE_CANCEL = 'decided-before-cancel';
/** A load that ended without a report and not by a timeout is decided by what its fence says. */
export const LOAD_FENCE_ASKED = 'load-fence-asked';
/** The workflow checks the numbers of its input (bounds, attempts, timeouts) are whole and at least 1. */
export const INPUT_RANGES = 'input-ranges';
/** A retained run's sweep may fail without failing the run (its outcome is decided by then). */
export const RETAIN_SWEEP_CAUGHT = 'retain-sweep-caught';
/** The input's numbers are also checked against the schema's maximums (INPUT_LIMITS). */
export const INPUT_LIMITS_CHECKED = 'input-limits';
/** A run cancelled while it extracts records abort; before, no outcome. */
export const CANCELLED_EXTRACTION_ABORTS = 'cancelled-extraction-aborts';
/** A run that fails or is cancelled while extracting discards again what its attempts' failed discards left. */
export const FAILED_RUN_DISCARDS_LEFT = 'failed-run-discards-left';
/** A run that fails before its decision publishes phase `failed`; before, its last phase (extracting, planning) stayed for good. */
export const FAILED_RUN_PHASE = 'failed-run-phase';
/** The run's table names (table, each of tables, schema) are checked to be strings within the schema's lengths; before, one that was not failed every workflow task. */
export const INPUT_NAMES = 'input-names';
