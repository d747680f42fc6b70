"""Checks an OpenRPC document with PyPI jsonschema, as an outside tool would: the document
against the OpenRPC meta-schema (openrpc-meta-schema.json, see its .md), and each method's
params and result schemas as JSON Schema draft-07. Prints a JSON summary; exit 1 on a fault.

usage: python openrpc_check.py DOCUMENT.json META-SCHEMA.json
"""
import json
import sys

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7


def main():
    document = json.load(open(sys.argv[1]))
    meta = json.load(open(sys.argv[2]))
    # The meta-schema's one outside reference, json-schema-tools' draft-07 meta-schema, is
    # draft-07's own (offline: the copy jsonschema carries).
    # Its pointers go through `definitions/JSONSchemaObject`, json-schema-tools' name for the
    # schema object, which here is draft-07's.
    draft7 = dict(jsonschema.Draft7Validator.META_SCHEMA)
    tools = {k: v for k, v in draft7.items() if k != "$id"}
    tools["definitions"] = dict(draft7["definitions"])
    tools["definitions"]["JSONSchemaObject"] = {k: v for k, v in draft7.items() if k not in ("$id", "$schema", "definitions")}
    registry = Registry().with_resources([
        (url, Resource.from_contents(tools, default_specification=DRAFT7))
        for url in ("https://meta.json-schema.tools", "https://meta.json-schema.tools/")
    ])
    faults = []
    validator = jsonschema.Draft7Validator(meta, registry=registry)
    for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path)):
        faults.append("document/%s: %s" % ("/".join(map(str, error.absolute_path)), error.message[:300]))
    schemas = 0
    for method in document.get("methods", []):
        named = [(p["name"], p["schema"]) for p in method.get("params", [])] + [("result", method["result"]["schema"])]
        for name, schema in named:
            if "$ref" in schema:
                continue
            schemas += 1
            try:
                jsonschema.Draft7Validator.check_schema(schema)
            except jsonschema.SchemaError as error:
                faults.append("%s %s: %s" % (method["name"], name, error.message[:300]))
    print(json.dumps({"methods": len(document.get("methods", [])), "schemas": schemas, "faults": faults}))
    sys.exit(1 if faults else 0)


if __name__ == "__main__":
    main()
