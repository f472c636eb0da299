// Every field of MachineConfig explains itself: a description and an example in the schema, found
// by `machineadm explain` and the API reference. A field added without them fails here.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { machineConfigJsonSchema } from '../../src/config/schema/index.ts';
import { allFields, findField, locateField } from '../../src/config/schema/fields.ts';

const root = machineConfigJsonSchema();
const fields = allFields(root);

describe('the fields of MachineConfig', () => {
  it('each have a description and an example', () => {
    expect(fields.length).toBeGreaterThan(100);
    const undocumented = fields.filter((f) => !f.description?.trim() || f.example === undefined).map((f) => `${f.path}:${f.description ? '' : ' no description'}${f.example === undefined ? ' no example' : ''}`);
    expect(undocumented, 'give these fields a description and an example in src/config/schema (description: ..., example: ...)').toEqual([]);
  });

  it("each field's example is a value the field accepts", () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    const wrong: string[] = [];
    for (const field of fields) {
      const found = locateField(root, field.path);
      if (!('schema' in found)) throw new Error(`${field.path} is listed but cannot be found`);
      const validate = ajv.compile(found.schema);
      if (!validate(field.example)) wrong.push(`${field.path}: ${JSON.stringify(field.example)} ${ajv.errorsText(validate.errors)}`);
    }
    expect(wrong).toEqual([]);
  });

  it('are found through lists and maps, a map key also with dots in it', () => {
    const taints = findField(root, 'spec.kubernetes.node.taints');
    expect(taints).toMatchObject({ field: { path: 'spec.kubernetes.node.taints', type: '[]object', children: ['key', 'value', 'effect'] } });
    expect(findField(root, 'spec.kubernetes.node.taints.effect')).toMatchObject({ field: { type: '"NoSchedule" | "PreferNoSchedule" | "NoExecute"', required: true } });
    expect(findField(root, 'spec.containerd.registries.docker.io.mirrors.url')).toMatchObject({ field: { path: 'spec.containerd.registries.*.mirrors.url', required: true } });
    expect(findField(root, 'spec.kubernetes.retries')).toMatchObject({ field: { type: 'integer', default: 3, required: false } });
    expect(findField(root, 'spec.kubernetes.token')).toMatchObject({ field: { secret: true } });
  });

  it('name the last known field and its children for a path that does not exist', () => {
    expect(findField(root, 'spec.kubernetes.node.tains')).toEqual({ known: 'spec.kubernetes.node', missing: 'tains', children: ['name', 'ip', 'providerID', 'labels', 'taints', 'kubeletExtraArgs', 'imagePullPolicy', 'imagePullSerial'] });
  });
});
