#!/usr/bin/env python3
"""Reference routes for issue 33's checks, made without any of our code.

    route-reference.py EXTRACT.osm OUT.json [pairs]      (default 500 pairs a mode)

Reads the extract with PyPI `osmium` and builds each profile's street network itself, by the
rules Protocols/routing.md documents (Routino's tagging.xml, for foot, bicycle and motorcar).
Pairs are junction nodes (three or more neighbours) of the largest strongly connected piece
of each network, drawn with a fixed seed. Routino finds no route for a few of them: those are
counted (`bicycling_unrouted`, `driving_unrouted`) and more are drawn.

- walking: networkx's Dijkstra over the walking network, weighted by time (4.8 km/h, ferries
  10 km/h, one-way streets ignored); the reference is the path's length.
- bicycling, driving: Routino's own command-line router (`routino-router --quickest
  --exact-nodes-only`) on a database planetsplitter makes of the extract keeping every node
  (`--prune-straight=0 --prune-short=0`: the same segments as ours; it still prunes pieces
  under 500 m that join nothing, which no pair is on, since `--prune-isolated=0` makes
  routino-router 3.3.3 crash), every street type
  the profile uses at preference 100 and every property at 50, so that it minimises time
  alone; the reference is its path's duration: each segment's length over its speed (the
  printed speed, the profile's, capped by the way's maxspeed; see `Segments`).

Writes {"walking": [...], "bicycling": [...], "driving": [...]}, each pair
{"from": [lat, lon], "to": [lat, lon], "metres": m, "seconds": s}.
"""
import itertools
import json
import math
import random
import subprocess
import sys
import tempfile

import networkx as nx
import osmium

YES = {"yes", "designated", "permissive", "true", "public", "official", "1"}
NO = {"no", "destination", "permit", "customer", "customers", "delivery", "residents", "private", "unsuitable",
      "limited", "restricted", "agricultural", "forestry", "false", "0"}

TYPES = {
    "motorway": "motorway", "motorway_link": "motorway", "trunk": "trunk", "trunk_link": "trunk",
    "primary": "primary", "primary_link": "primary", "secondary": "secondary", "secondary_link": "secondary",
    "tertiary": "tertiary", "tertiary_link": "tertiary", "unclassified": "unclassified", "minor": "unclassified",
    "road": "unclassified", "residential": "residential", "living_street": "residential", "service": "service",
    "access": "service", "services": "service", "rest_area": "service", "layby": "service", "track": "track",
    "byway": "track", "unsurfaced": "track", "unpaved": "track", "cycleway": "cycleway", "path": "path",
    "footway": "path", "bridleway": "path", "pedestrian": "path", "walkway": "path", "trail": "path",
    "steps": "steps", "ferry": "ferry",
}
CAR_KPH = {"motorway": 112, "trunk": 96, "primary": 96, "secondary": 88, "tertiary": 80, "unclassified": 64,
           "residential": 48, "service": 32}


def norm(value):
    return "yes" if value in YES else "no" if value in NO else value


def way_access(tags):
    """(type, {foot, bicycle, motorcar}, oneway, cycle_both_ways) or None, as tagging.xml reads a way."""
    tags = dict(tags)
    for key in ("foot", "bicycle", "motorcar"):
        if key not in tags and "access:" + key in tags:
            tags[key] = tags["access:" + key]
    if tags.get("route") == "ferry":
        tags["highway"] = "ferry"
    kind = TYPES.get(tags.get("highway"))
    if kind is None or tags.get("area") == "yes":
        return None
    allow = {"foot": False, "bicycle": False, "motorcar": False}
    oneway = 0
    if kind == "motorway":
        allow["motorcar"], oneway = True, 1
    elif kind == "trunk":
        allow.update(bicycle=True, motorcar=True)
    elif kind in CAR_KPH:
        allow.update(foot=True, bicycle=True, motorcar=True)
    elif kind in ("track", "cycleway"):
        allow.update(foot=True, bicycle=True)
    elif kind == "path":
        allow["foot"] = True
        allow["bicycle"] = tags["highway"] == "bridleway"
    elif kind == "steps":
        allow["foot"] = True
    else:  # ferry: what it names, and what is smaller
        vehicle = tags.get("access") == "yes" or tags.get("vehicle") == "yes"
        motor = vehicle or tags.get("motor_vehicle") == "yes"
        allow["motorcar"] = motor or any(tags.get(k) == "yes" for k in ("motorcar", "goods", "psv", "hgv"))
        allow["bicycle"] = vehicle or tags.get("bicycle") == "yes"
        allow["foot"] = tags.get("access") == "yes" or tags.get("foot") == "yes" or tags.get("bicycle") == "yes"
    n = {k: norm(v) for k, v in tags.items()}
    if "access" in n and n["access"] != "yes":
        allow = {"foot": n["access"] == "foot", "bicycle": False, "motorcar": False}
    designation = n.get("designation")
    if designation in ("restricted_byway", "permissive_bridleway", "public_bridleway", "bridleway", "public_cycleway"):
        allow.update(foot=True, bicycle=True)
    elif designation in ("byway_open_to_all_traffic", "public_highway", "public_byway", "byway"):
        allow.update(foot=True, bicycle=True, motorcar=True)
    elif designation in ("permissive_footpath", "public_footpath", "footpath"):
        allow["foot"] = True
    if n.get("motorroad") == "yes":
        allow.update(foot=False, bicycle=False)
    if n.get("footway") in ("sidewalk", "both", "left", "right", "yes", "crossing"):
        allow["foot"] = True
    if n.get("sidewalk") in ("both", "left", "right", "yes", "separate"):
        allow["foot"] = True
    both_ways = False
    if n.get("cycleway") in ("lane", "track", "shared_lane", "opposite", "crossing", "yes", "opposite_lane", "opposite_track"):
        allow["bicycle"] = True
    if n.get("cycleway") in ("opposite", "opposite_lane", "opposite_track"):
        both_ways = True
    if n.get("oneway:bicycle") == "no":
        allow["bicycle"], both_ways = True, True
    if "vehicle" in n and n["vehicle"] != "yes":
        allow.update(bicycle=False, motorcar=False)
    if "motor_vehicle" in n and n["motor_vehicle"] != "yes":
        allow["motorcar"] = False
    for key in ("foot", "bicycle", "motorcar"):
        if key in n:
            allow[key] = n[key] == "yes"
    if n.get("junction") == "roundabout":
        oneway = 1
    oneway = {"yes": 1, "-1": -1, "no": 0}.get(n.get("oneway"), oneway)
    return kind, allow, oneway, both_ways


def node_allows(tags):
    allow = {"foot": True, "bicycle": True, "motorcar": True}
    barrier = tags.get("barrier")
    if barrier in ("kissing_gate", "footgate", "stile", "v_stile", "turnstile", "squeeze", "squeeze_stile", "horse_stile",
                   "horse_jump", "step_over", "cycle_barrier"):
        allow.update(bicycle=False, motorcar=False)
    elif barrier in ("motorcycle_barrier", "bollard", "post", "car_barrier", "car_trap"):
        allow["motorcar"] = False
    n = {k: norm(v) for k, v in tags.items()}
    if "access" in n and n["access"] != "yes":
        allow = {"foot": n["access"] == "foot", "bicycle": False, "motorcar": False}
    if "vehicle" in n and n["vehicle"] != "yes":
        allow.update(bicycle=False, motorcar=False)
    if "motor_vehicle" in n and n["motor_vehicle"] != "yes":
        allow["motorcar"] = False
    for key in ("foot", "bicycle", "motorcar"):
        if key in n:
            allow[key] = n[key] == "yes"
    return allow


class Reader(osmium.SimpleHandler):
    def __init__(self):
        super().__init__()
        self.nodes, self.node_tags, self.ways = {}, {}, []

    def node(self, n):
        self.nodes[n.id] = (n.location.lat, n.location.lon)
        if len(n.tags):
            self.node_tags[n.id] = {t.k: t.v for t in n.tags}

    def way(self, w):
        tags = {t.k: t.v for t in w.tags}
        if "highway" in tags or tags.get("route") == "ferry":
            self.ways.append((tags, [nd.ref for nd in w.nodes]))


def metres(a, b):
    (lat1, lon1), (lat2, lon2) = a, b
    p1, p2 = math.radians(lat1), math.radians(lat2)
    h = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lon2 - lon1) / 2) ** 2
    return 2 * 6_371_008.8 * math.asin(math.sqrt(h))


def network(reader, transport):
    """The profile's directed graph: edges weighted by seconds, with their metres; a node a
    barrier closes to the transport can be reached but not left."""
    graph = nx.DiGraph()
    for tags, refs in reader.ways:
        access = way_access(tags)
        if access is None or not access[1][transport]:
            continue
        kind, _, oneway, both_ways = access
        if transport == "foot":
            kph = 10 if kind == "ferry" else 4.8
            oneway = 0
        elif transport == "bicycle":
            if kind in ("motorway", "steps"):
                continue
            kph = 10 if kind == "ferry" else 20
            if both_ways:
                oneway = 0
        else:
            if kind not in CAR_KPH and kind != "ferry":
                continue
            kph = 10 if kind == "ferry" else CAR_KPH[kind]
        # A way the extract's edge cuts keeps the segments between nodes it has.
        for a, b in zip(refs, refs[1:]):
            if a == b or a not in reader.nodes or b not in reader.nodes:
                continue
            m = metres(reader.nodes[a], reader.nodes[b])
            for tail, head, allowed in ((a, b, oneway >= 0), (b, a, oneway <= 0)):
                if allowed and node_allows(reader.node_tags.get(tail, {}))[transport]:
                    seconds = m / (kph / 3.6)
                    if not graph.has_edge(tail, head) or graph[tail][head]["seconds"] > seconds:
                        graph.add_edge(tail, head, seconds=seconds, metres=m)
    return graph


def junction_pairs(graph, seed):
    """Random pairs of junctions of the largest piece, without end (the caller takes what it needs)."""
    piece = max(nx.strongly_connected_components(graph), key=len)
    junctions = sorted(n for n in piece if len(set(graph.successors(n)) | set(graph.predecessors(n))) >= 3)
    rng = random.Random(seed)
    while True:
        yield tuple(rng.sample(junctions, 2))


def maxspeed(text):
    """A maxspeed tag in km/h, as tagging.xml reads it (a number, then mph or nothing), or None."""
    number = ""
    for ch in text or "":
        if not (ch.isdigit() or ch == "."):
            break
        number += ch
    try:
        value = float(number)
    except ValueError:
        return None
    rest = text[len(number):].strip()
    return value * 1.609 if rest.startswith("mph") else value if value > 0 else None


class Segments:
    """The OSM segment between two printed route points, to time Routino's path exactly:
    Routino prints each point's position to six decimals; its speed column is the profile's
    speed for the street type, before the way's maxspeed caps it; its durations are printed to
    0.01 min, too coarse to sum; and it keeps each segment's length in whole metres, cut down
    (its distance_t), which makes a path through many short segments up to 5 % shorter than it
    is. Each segment is timed as its exact length over the capped speed."""

    def __init__(self, reader):
        self.cells = {}
        for node, (lat, lon) in reader.nodes.items():
            self.cells.setdefault((round(lat, 4), round(lon, 4)), []).append(node)
        self.nodes = reader.nodes
        self.limits = {}
        for tags, refs in reader.ways:
            limit = maxspeed(tags.get("maxspeed"))
            for a, b in zip(refs, refs[1:]):
                self.limits.setdefault(frozenset((a, b)), []).append(limit)

    def node(self, lat, lon):
        best = None
        for dlat in (-0.0001, 0, 0.0001):
            for dlon in (-0.0001, 0, 0.0001):
                for node in self.cells.get((round(lat + dlat, 4), round(lon + dlon, 4)), []):
                    d = metres((lat, lon), self.nodes[node])
                    if d < 0.5 and (best is None or d < best[0]):
                        best = (d, node)
        return best[1] if best else None

    def limit(self, a, b):
        """The way's maxspeed between two points, None when it has none (or is not found)."""
        na, nb = self.node(*a), self.node(*b)
        limits = [x for x in self.limits.get(frozenset((na, nb)), []) if x]
        return min(limits) if limits else None

    def length(self, a, b):
        """Metres between two printed points, from the nodes' own positions when found."""
        na, nb = self.node(*a), self.node(*b)
        return metres(self.nodes[na] if na else a, self.nodes[nb] if nb else b)


def routino(directory, profile, a, b, segments):
    """Routino's quickest route between two nodes: (metres, seconds), or None."""
    if profile == "motorcar":
        highways = {"motorway": 100, "trunk": 100, "primary": 100, "secondary": 100, "tertiary": 100, "unclassified": 100,
                    "residential": 100, "service": 100, "track": 0, "cycleway": 0, "path": 0, "steps": 0, "ferry": 100}
    else:
        highways = {"motorway": 0, "trunk": 100, "primary": 100, "secondary": 100, "tertiary": 100, "unclassified": 100,
                    "residential": 100, "service": 100, "track": 100, "cycleway": 100, "path": 100, "steps": 0, "ferry": 100}
    properties = ["paved", "multilane", "bridge", "tunnel", "footroute", "bicycleroute"]
    args = ["routino-router", f"--dir={directory}", f"--profile={profile}", "--quickest", "--exact-nodes-only",
            "--output-text-all", "--output-stdout",
            f"--lat1={a[0]}", f"--lon1={a[1]}", f"--lat2={b[0]}", f"--lon2={b[1]}"]
    args += [f"--highway-{k}={v}" for k, v in highways.items()] + [f"--property-{p}=50" for p in properties]
    run = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        return None
    total_m = total_s = 0.0
    previous = None
    for line in run.stdout.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        cols = line.split("\t")
        # latitude, longitude, node, type, segment km, segment min, total km, total min, speed, bearing, highway
        point = (float(cols[0]), float(cols[1]))
        if previous is not None and len(cols) >= 9 and cols[8].strip():
            kph = float(cols[8])
            limit = segments.limit(previous, point)
            if limit is not None:
                kph = min(kph, limit)
            m = segments.length(previous, point)
            total_m += m
            total_s += m / (kph / 3.6)
        previous = point
    return total_m, total_s


def main(argv):
    osm, out = argv[0], argv[1]
    count = int(argv[2]) if len(argv) > 2 else 500
    with tempfile.TemporaryDirectory() as routino_dir:
        subprocess.run(["planetsplitter", f"--dir={routino_dir}", "--tagging=/usr/share/routino/tagging.xml", "--prune-straight=0", "--prune-short=0", osm],
                       check=True, capture_output=True, timeout=600)
        reference(osm, routino_dir, out, count)


def reference(osm, routino_dir, out, count):
    reader = Reader()
    reader.apply_file(osm)
    result = {}
    walking = network(reader, "foot")
    pairs = []
    for a, b in itertools.islice(junction_pairs(walking, 33), count):
        seconds, path = nx.single_source_dijkstra(walking, a, b, weight="seconds")
        m = sum(walking[u][v]["metres"] for u, v in zip(path, path[1:]))
        pairs.append({"from": reader.nodes[a], "to": reader.nodes[b], "metres": m, "seconds": seconds})
    result["walking"] = pairs
    segments = Segments(reader)
    for mode, profile in (("bicycling", "bicycle"), ("driving", "motorcar")):
        pairs = []
        unrouted = 0
        # Routino finds no route for a few pairs (its own reading of a restriction or a node):
        # those are counted, and others drawn, up to twice as many in all.
        for a, b in itertools.islice(junction_pairs(network(reader, profile), 34 if profile == "bicycle" else 35), 2 * count):
            if len(pairs) == count:
                break
            found = routino(routino_dir, profile, reader.nodes[a], reader.nodes[b], segments)
            if found is None:
                unrouted += 1
                continue
            pairs.append({"from": reader.nodes[a], "to": reader.nodes[b], "metres": found[0], "seconds": found[1]})
        result[mode] = pairs
        result[mode + "_unrouted"] = unrouted
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1:])
