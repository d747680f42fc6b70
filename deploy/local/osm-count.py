#!/usr/bin/env python3
"""Counts the places an OpenStreetMap XML file holds under a mapping table, by category.

A second implementation of the rules of Protocols/import.md ("OpenStreetMap"), with Python's
own XML parser, so that the Swift import (OSMDocument) is checked against an independent count:
named nodes and ways (name not blank) whose first matching mapping line names a category; ways
only when every node they list is in the file. Prints JSON:
{"categories": {category: count}, "ways_missing_nodes": N, "places": N, "nodes": N, "ways": N,
 "relations": N, "names": {name: [[external id, category]]}} (names only for those given with --name).

usage: osm-count.py FILE.osm MAPPING.tsv [--name NAME]...
"""
import json
import sys
import xml.etree.ElementTree as ET


def read_mapping(path):
    rules = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            key, value = fields[0].split("=", 1)
            rules.append((key, None if value == "*" else value, None if fields[1] == "-" else fields[1]))
    return rules


def category(rules, tags):
    for key, value, cat in rules:
        if key in tags and (value is None or tags[key] == value):
            return cat
    return None


def main():
    path, mapping_path = sys.argv[1], sys.argv[2]
    wanted = {sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "--name"}
    rules = read_mapping(mapping_path)
    node_ids = set()
    ways = []  # (id, refs, category, name) of named mapped ways, checked once every node is known
    counts, names, missing = {}, {}, 0
    elements = {"node": 0, "way": 0, "relation": 0}

    def found(cat, name, external_id):
        counts[cat] = counts.get(cat, 0) + 1
        if name in wanted:
            names.setdefault(name, []).append([external_id, cat])

    for _, element in ET.iterparse(path, events=("end",)):
        if element.tag not in ("node", "way", "relation"):
            continue
        elements[element.tag] += 1
        tags = {t.get("k"): t.get("v") for t in element.findall("tag")}
        name = tags.get("name", "").strip()
        cat = category(rules, tags) if name else None
        if element.tag == "node":
            node_ids.add(element.get("id"))
            if cat:
                found(cat, name, "node/" + element.get("id"))
        elif element.tag == "way" and cat:
            ways.append((element.get("id"), [nd.get("ref") for nd in element.findall("nd")], cat, name))
        element.clear()
    for way_id, refs, cat, name in ways:
        if all(ref in node_ids for ref in refs):
            found(cat, name, "way/" + way_id)
        else:
            missing += 1
    print(json.dumps({"categories": counts, "ways_missing_nodes": missing, "places": sum(counts.values()),
                      "nodes": elements["node"], "ways": elements["way"], "relations": elements["relation"],
                      "names": names}, sort_keys=True, ensure_ascii=False))


main()
