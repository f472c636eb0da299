// The names a configuration may take from the machine ({ fromMachine: NAME }, --set NAME=VALUE).
// A module of its own with no imports: the command line lists them without loading the schema.
export const MACHINE_REFERENCES = ['instanceId', 'instanceName', 'localHostname', 'privateIP', 'zone', 'region', 'instanceType', 'cloud'] as const;

/** What --set and a facts file's "machine" map may give: the references, and the provider ID itself. */
export const GIVEN_VALUE_NAMES = [...MACHINE_REFERENCES, 'providerID'] as const;
