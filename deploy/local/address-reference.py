#!/usr/bin/env python3
"""Reference addresses for the geocoder's checks, read from the extract without any of our code.

    address-reference.py EXTRACT.osm OUT.json

Reads the extract's addresses with PyPI `osmium` by Protocols/search.md's address rules:
`addr:housenumber` with `addr:street` (else `addr:place`) on a node (its position), a closed
way (its ring's area centroid, planar on lon/lat degrees) or a multipolygon (that of its
largest ring joined from outer members). Open ways (and closed ones missing a node) and
multipolygons missing a node or way or with no closed ring are skipped and counted.
Queries: 500 addresses (seed 33) as "street number[ city]", with every address of the same
street and number expected, and the query with one typo in the street's longest word.
Reverse: 500 points (seed 34) in the addresses' box grown by 0.002 degrees, with the nearest
address by brute force (haversine), its distance and the second-nearest distance.
"""
import json
import math
import os
import random
import string
import sys

import osmium

KINDS = ("node", "way", "relation")


def address_tags(tags):
    """(street, housenumber, postcode, city), or None when the element is no address."""
    value = lambda key: (tags.get(key) or "").strip() or None
    street, number = value("addr:street") or value("addr:place"), value("addr:housenumber")
    return (street, number, value("addr:postcode"), value("addr:city")) if street and number else None


class Reader(osmium.SimpleHandler):
    def __init__(self):
        super().__init__()
        self.found, self.ways, self.relations, self.open_ways = [], {}, [], 0

    def node(self, n):
        if addr := address_tags(n.tags):
            self.found.append(("node", n.id, addr, (n.location.lat, n.location.lon)))

    def way(self, w):
        refs = [nd.ref for nd in w.nodes]
        points = [(nd.location.lon, nd.location.lat) if nd.location.valid() else None for nd in w.nodes]
        self.ways[w.id] = (refs, points)  # every way: a multipolygon later may need it
        addr = address_tags(w.tags)
        if addr and len(refs) >= 4 and refs[0] == refs[-1] and None not in points:
            (x, y), _ = centroid(points[:-1])
            self.found.append(("way", w.id, addr, (y, x)))
        elif addr:
            self.open_ways += 1

    def relation(self, r):
        if (addr := address_tags(r.tags)) and r.tags.get("type") == "multipolygon":
            outer = [m.ref for m in r.members if m.type == "w" and m.role in ("outer", "")]
            self.relations.append((r.id, addr, outer))


def centroid(ring):
    """((x, y), |area|) of a ring without its repeated last vertex (sums taken from its first vertex)."""
    x0, y0 = ring[0]
    pts = [(x - x0, y - y0) for x, y in ring]
    a = cx = cy = 0.0
    for (x1, y1), (x2, y2) in zip(pts, pts[1:] + pts[:1]):
        cross = x1 * y2 - x2 * y1
        a, cx, cy = a + cross, cx + (x1 + x2) * cross, cy + (y1 + y2) * cross
    a /= 2
    if abs(a) < 1e-14:
        distinct = list(dict.fromkeys(ring))
        return (sum(p[0] for p in distinct) / len(distinct), sum(p[1] for p in distinct) / len(distinct)), abs(a)
    return (x0 + cx / (6 * a), y0 + cy / (6 * a)), abs(a)


def rings(ways):
    """Closed rings (vertex lists without the repeated last) chained end to end from (refs, points) ways."""
    unused, closed = list(ways), []
    while unused:
        refs, points = map(list, unused.pop(0))
        while refs[0] != refs[-1]:
            following = next((w for w in unused if refs[-1] in (w[0][0], w[0][-1])), None)
            if following is None:
                break
            unused.remove(following)
            more_refs, more_points = following if following[0][0] == refs[-1] else (following[0][::-1], following[1][::-1])
            refs, points = refs + more_refs[1:], points + more_points[1:]
        if refs[0] == refs[-1] and len(refs) >= 4:
            closed.append(points[:-1])
    return closed


def typo(word, rng):
    """The word changed by one typo: a letter substituted, deleted, inserted or swapped; not the first."""
    letters, inner = string.ascii_lowercase, [i for i in range(1, len(word)) if word[i].isalpha()]  # not the first
    while True:
        op = rng.choice(("substitute", "delete", "insert", "swap"))
        i = rng.randrange(1, len(word) + 1) if op == "insert" else rng.choice(inner)
        if op == "insert":
            out = word[:i] + rng.choice(letters) + word[i:]
        elif op == "substitute":
            out = word[:i] + rng.choice([c for c in letters if c != word[i].lower()]) + word[i + 1:]
        elif op == "delete":
            out = word[:i] + word[i + 1:]
        elif i + 1 in inner and word[i].casefold() != word[i + 1].casefold():
            out = word[:i] + word[i + 1] + word[i] + word[i + 2:]
        else:
            continue
        if out.casefold() != word.casefold():
            return out


def metres(lat1, lon1, lat2, lon2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    h = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lon2 - lon1) / 2) ** 2
    return 2 * 6_371_008.8 * math.asin(math.sqrt(h))


def main(argv):
    osm, out = argv[0], argv[1]
    reader = Reader()
    reader.apply_file(osm, locations=True)
    found, relations_skipped = list(reader.found), 0
    for rid, addr, outer in reader.relations:
        ways = [reader.ways.get(w) for w in outer]
        closed = rings(ways) if ways and all(w and w[0] and None not in w[1] for w in ways) else []
        if closed:
            (x, y), _ = max((centroid(ring) for ring in closed), key=lambda c: c[1])
            found.append(("relation", rid, addr, (y, x)))
        else:
            relations_skipped += 1
    found.sort(key=lambda f: (KINDS.index(f[0]), f[1]))
    addresses = [{"id": f"{kind}/{oid}", "street": street, "housenumber": number, "postcode": postcode, "city": city,
                  "lat": round(lat, 7), "lon": round(lon, 7)}
                 for kind, oid, (street, number, postcode, city), (lat, lon) in found]

    same = {}
    for a in addresses:
        same.setdefault((a["street"].casefold(), a["housenumber"].casefold()), []).append([a["lat"], a["lon"]])
    rng, queries = random.Random(33), []
    for a in rng.sample(addresses, min(500, len(addresses))):
        city = " " + a["city"] if a["city"] else ""
        words = a["street"].split(" ")
        longest = max(range(len(words)), key=lambda i: sum(c.isalpha() for c in words[i]))
        typo_q = None
        if sum(c.isalpha() for c in words[longest]) >= 5:
            words[longest] = typo(words[longest], rng)
            typo_q = " ".join(words) + " " + a["housenumber"] + city
        queries.append({"id": a["id"], "q": a["street"] + " " + a["housenumber"] + city, "typo_q": typo_q,
                        "expected": same[(a["street"].casefold(), a["housenumber"].casefold())]})

    lats, lons = [a["lat"] for a in addresses], [a["lon"] for a in addresses]
    rng, reverse = random.Random(34), []
    for _ in range(500):
        lat = round(rng.uniform(min(lats) - 0.002, max(lats) + 0.002), 7)
        lon = round(rng.uniform(min(lons) - 0.002, max(lons) + 0.002), 7)
        ranked = sorted((metres(lat, lon, a["lat"], a["lon"]), a["id"]) for a in addresses)
        reverse.append({"lat": lat, "lon": lon, "nearest": ranked[0][1], "distance_m": ranked[0][0], "second_m": ranked[1][0]})
    counts = {kind + "s": sum(f[0] == kind for f in found) for kind in KINDS}
    counts.update(open_ways_skipped=reader.open_ways, relations_skipped=relations_skipped)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"source": os.path.basename(osm), "counts": counts, "addresses": addresses, "queries": queries,
                   "reverse": reverse}, f, indent=None, separators=(",", ":"))


if __name__ == "__main__":
    main(sys.argv[1:])
