"""Checks an OpenRPC document with PyPI jsonschema, as an outside tool would: the document
against the OpenRPC meta-schema (openrpc-meta-schema.json, see its .md), each method's
params and result schemas and each push topic's body schema (`x-notifications`) as JSON
Schema draft-07, each method's examples against its schemas, and, given the Protocols folder,
every request and reply of its transcripts against its method's schemas (```transcript
blocks: `> [as ID:ROLE] METHOD {params}`, `< {"ok":true,"body":…}`; ```jsonrpc blocks: a
request and the reply of its id), a refusal's code against the method's declared errors.
Prints a JSON summary; exit 1 on a fault.

usage: python openrpc_check.py DOCUMENT.json META-SCHEMA.json [PROTOCOLS-DIR]
"""
import glob
import json
import os
import re
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
    for push in document.get("x-notifications", []):
        schemas += 1
        try:
            jsonschema.Draft7Validator.check_schema(push["body"])
        except jsonschema.SchemaError as error:
            faults.append("push %s: %s" % (push["name"], error.message[:300]))
    examples = check_examples(document, faults)
    exchanges = 0
    if len(sys.argv) > 3:
        exchanges = check_transcripts(document, sys.argv[3], faults)
    print(json.dumps({"methods": len(document.get("methods", [])), "schemas": schemas, "examples": examples, "exchanges": exchanges,
                      "notifications": len(document.get("x-notifications", [])), "faults": faults}))
    sys.exit(1 if faults else 0)


def placeholder(value):
    """Whether a value is one the transcripts leave open (`"<any>"`, `"<ts>"`, `"<token>"`)."""
    return isinstance(value, str) and re.fullmatch(r"<\w+>", value) is not None


def params_schema(method):
    """The method's by-name params as one object schema."""
    properties = {p["name"]: p["schema"] for p in method["params"]}
    required = [p["name"] for p in method["params"] if p.get("required")]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def check_examples(document, faults):
    """Validates each method's examples against its params and result schemas; returns how many."""
    checked = 0
    for method in document["methods"]:
        for example in method.get("examples", []):
            checked += 1
            params = {p["name"]: p["value"] for p in example["params"]}
            for error in list(jsonschema.Draft7Validator(params_schema(method)).iter_errors(params))[:1]:
                faults.append("%s example: params: %s" % (method["name"], error.message[:200]))
            if "result" in example and "$ref" not in method["result"]["schema"]:
                for error in list(jsonschema.Draft7Validator(method["result"]["schema"]).iter_errors(example["result"]["value"]))[:1]:
                    faults.append("%s example: result: %s" % (method["name"], error.message[:200]))
    return checked


def exchanges_in(path):
    """(line, method, params text, reply) of a Markdown file: its service transcripts, the reply
    as `{"ok":…,"body"|"error"}`, and its JSON-RPC blocks, a refusal's `error.data` as `error`."""
    kind, pending, asked = None, None, {}
    for number, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        if line.startswith("```"):
            kind = line[3:] if kind is None else None
            asked = {}
            continue
        if kind == "transcript":
            if line.startswith("> "):
                request = re.sub(r"^\[as \d+:\w+\] ", "", line[2:])
                name, _, body = request.partition(" ")
                pending = (number, name, body.strip() or "{}")
            elif line.startswith("< ") and pending:
                number0, name, body = pending
                pending = None
                try:
                    reply = json.loads(line[2:])
                except ValueError:
                    continue
                yield number0, name, body, reply
        elif kind == "jsonrpc" and (line.startswith("> ") or line.startswith("< ")):
            try:
                message = json.loads(line[2:])
            except ValueError:
                continue
            if not isinstance(message, dict) or not isinstance(message.get("id"), int):
                continue  # a batch, a notification
            if line.startswith("> ") and "method" in message:
                asked[message["id"]] = (number, message["method"], json.dumps(message.get("params", {})))
            elif message["id"] in asked:
                number0, name, body = asked.pop(message["id"])
                if "result" in message:
                    yield number0, name, body, {"ok": True, "body": message["result"]}
                elif isinstance(message.get("error", {}).get("data"), dict):
                    yield number0, name, body, {"ok": False, "error": message["error"]["data"], "rpc_code": message["error"]["code"]}


def check_transcripts(document, folder, faults):
    """Validates each transcript exchange of an offered method; returns how many were checked."""
    methods = {m["name"]: m for m in document["methods"]}
    common = document.get("components", {}).get("errors", {})
    checked = 0
    for path in sorted(glob.glob(os.path.join(folder, "*.md"))):
        for number, name, body, reply in exchanges_in(path):
            method = methods.get(name)
            if method is None:
                continue  # internal and runtime methods are not in the document
            where = "%s line %d: %s" % (os.path.basename(path), number, name)
            try:
                params = json.loads(body)
            except ValueError:
                continue  # a line that shows a malformed request on purpose
            checked += 1
            refused = not reply.get("ok", False)
            errors = list(jsonschema.Draft7Validator(params_schema(method)).iter_errors(params))
            # A request the docs show refused by its shape may break the schema; one answered must not.
            if errors and not (refused and reply["error"]["code"] == "invalid_argument"):
                faults.append("%s: params: %s" % (where, errors[0].message[:200]))
            if refused:
                code = reply["error"]["code"]
                declared = {e["data"]["code"]: e["code"] for e in method["errors"] if "data" in e}
                declared.update({e["$ref"].rsplit("/", 1)[1]: common[e["$ref"].rsplit("/", 1)[1]]["code"]
                                 for e in method["errors"] if "$ref" in e})
                if code not in declared:
                    faults.append("%s: answers %s, which the method does not declare" % (where, code))
                # JSON-RPC's own codes for a request it cannot read (-32700, -32600) or whose
                # method does not exist (-32601) come before any method's.
                elif "rpc_code" in reply and reply["rpc_code"] != declared[code] and reply["rpc_code"] not in (-32700, -32600, -32601):
                    faults.append("%s: answers %s as %d, declared %d" % (where, code, reply["rpc_code"], declared[code]))
                continue
            if "$ref" in method["result"]["schema"]:
                continue  # rpc.discover: the document itself, checked above
            errors = [e for e in jsonschema.Draft7Validator(method["result"]["schema"]).iter_errors(reply.get("body", {}))
                      if not placeholder(e.instance)]
            if errors:
                faults.append("%s: result: %s at %s" % (where, errors[0].message[:200], "/".join(map(str, errors[0].absolute_path))))
    return checked


if __name__ == "__main__":
    main()
