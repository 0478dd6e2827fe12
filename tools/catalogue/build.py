#!/usr/bin/env python3
"""Compile vegdb's data catalogue (datakatalog) from the real NVDB reference files.

Usage:  python3 tools/catalogue/build.py            # writes src/catalog/data/datakatalog.json

Inputs (all under tools/catalogue/sources/, unmodified copies; see SOURCES.md there):
  nvdb_ftMapping.csv, nvdb_ptMapping.csv, nvdb_enMapping.csv   every type / property / allowed value id
  gml/<id>.xsd                 GML schemas (catalogue 2.38) for 13 key types
  v3/vegobjekttype_<id>.json   full API v3 definitions of 105, 14, 581, 95 (+ datatyper)
  datakatalog-bomstasjoner.json  v1 definition of 45 Bomstasjon
  objekttyper.json             the 2015 (v1, catalogue 2.03) list of 382 types
  npra_vegobjekttype.json      the 2024/25 id -> name map (414 types)
  codelists/*.gml              Arkitektum GML code lists keyed by egenskapstype id

Precedence where sources overlap (newest, richest first): v3 JSON > GML 2.38 > v1 JSON > CSV
> code lists. What no source gives is filled by the rules below (also in ARCHITECTURE.md):

  R1 datatype of a non-enumerated property without GML/v3 type: derived from its SOSI name
     (dato -> 8 Dato; antall/lengde/bredde/hoyde/... -> 2 Tall; otherwise 1 Tekst).
  R2 enumerations are 30 (FlerverdiAttributt, Tekst) unless every value is a number -> 31.
  R3 viktighet: v3 text; GML element without minOccurs -> 2 PÅKREVD_IKKE_ABSOLUTT;
     otherwise 4 OPSJONELL.
  R4 display names (navn) of properties without GML/v3/v1 name: the camelCase SOSI name split
     into words, '_' read as ', ', first letter upper case.
  R5 feltlengde/desimaler/min/maks/enhet for derived numbers come from the name (see NUMBER_RULES).
  R6 sensitivitet 1 for owner names, phone numbers, contact info and private agreements.
  R7 stedfesting: v3 > GML lineaerPosisjon > 2015 list > geometry property (senterlinje LINJE,
     posisjon PUNKT) > INGEN.
  R8 relasjonstyper come only from v3/v1 JSON; each relation is mirrored onto the other type
     (barn of the parent = foreldre of the child), with the same relation id.
"""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "sources")
OUT = os.path.join(HERE, "..", "..", "src", "catalog", "data", "datakatalog.json")

XS = "{http://www.w3.org/2001/XMLSchema}"
SC = "{http://www.interactive-instruments.de/ShapeChange/AppInfo}"
GMLNS = "{http://www.opengis.net/gml/3.2}"

VERSION = {"id": 2038, "versjon": "2.38", "dato": "2024-11-19"}

VIKTIGHET = {
    "PÅKREVD_ABSOLUTT": 1,
    "PÅKREVD_IKKE_ABSOLUTT": 2,
    "PÅKREVD": 2,
    "BETINGET": 3,
    "OPSJONELL": 4,
    "MINDRE_VIKTIG": 4,
    "IKKE_SATT": 4,
    "SPESIALINFORMASJON": 7,
    "HISTORISK": 9,
}
VIKTIGHET_TEKST = {1: "PÅKREVD_ABSOLUTT", 2: "PÅKREVD_IKKE_ABSOLUTT", 3: "BETINGET",
                   4: "OPSJONELL", 7: "SPESIALINFORMASJON", 9: "HISTORISK"}

GEOMETRY = {"posisjon": 17, "senterlinje": 18, "område": 19}
GEOMETRY_NAME = {17: "Geometri, punkt", 18: "Geometri, linje", 19: "Geometri, flate"}

# name pattern -> (integer?, unit kortnavn, feltlengde, desimaler, min, maks)
NUMBER_RULES = [
    (r"(^|_)(år|.*år$|årGjelderFor|.*[Åå]r_)", (True, None, 4, 0, 1800, 2100)),
    (r"^antall|Antall|^ådt|ÅDT|ådt", (True, "stk", 6, 0, 0, 999999)),
    (r"nummer$|Nummer$|Meter$|meter$", (True, None, 8, 0, 0, 99999999)),
    (r"areal|Areal", (False, "m2", 8, 1, 0, 999999)),
    (r"diameter|Diameter|tykkelse|Tykkelse", (False, "mm", 6, 0, 0, 99999)),
    (r"lengde|Lengde|bredde|Bredde|høyde|Høyde|dybde|Dybde|avstand|Avstand", (False, "m", 7, 2, 0, 9999.99)),
    (r"vinkel|Vinkel", (False, "grader", 5, 1, 0, 360)),
    (r"stigning|Stigning|helning|Helning", (False, "%", 4, 1, 0, 25)),
    (r"effekt|Effekt", (False, "W", 6, 0, 0, 99999)),
    (r"takst|Takst|kostnad|Kostnad|budsjett|Budsjett", (True, "kr", 9, 0, 0, 999999999)),
    (r"vekt|Vekt", (False, "tonn", 5, 1, 0, 999)),
]
TEXT_LENGTH = [(r"tilleggsinformasjon|merknad|Merknad|beskrivelse", 500),
               (r"prosjektreferanse|arkiv", 200), (r"_Id$|Id$|FKB_ID|ID$", 20), (r"navn|Navn", 100)]
SENSITIVE = re.compile(r"telefon|kontaktinfo|eier_Navn|privatAvtale|personell", re.I)
UNITS_FALLBACK = [  # only used when a unit named by NUMBER_RULES is not already known from v3 data
    {"id": 1, "navn": "Meter", "kortnavn": "m"},
    {"id": 2, "navn": "Millimeter", "kortnavn": "mm"},
    {"id": 3, "navn": "Kvadratmeter", "kortnavn": "m2"},
    {"id": 4, "navn": "Stykk", "kortnavn": "stk"},
    {"id": 5, "navn": "Grader", "kortnavn": "grader"},
    {"id": 6, "navn": "Prosent", "kortnavn": "%"},
    {"id": 7, "navn": "Watt", "kortnavn": "W"},
    {"id": 8, "navn": "Kroner", "kortnavn": "kr"},
    {"id": 9, "navn": "Tonn", "kortnavn": "tonn"},
    {"id": 10, "navn": "Kilometer per time", "kortnavn": "km/h"},
]


def read_csv(name):
    with open(os.path.join(SRC, name), encoding="utf-8") as f:
        lines = f.read().split("\n")
    return [l.split(";") for l in lines[1:] if l]


def words(sosinavn):
    """R4: 'høyde_MastStolpe' -> 'Høyde, mast stolpe'."""
    parts = []
    for part in sosinavn.split("_"):
        toks = re.findall(r"[A-ZÆØÅ]{2,}(?=[A-ZÆØÅ][a-zæøå]|$|[0-9])|[A-ZÆØÅ]?[a-zæøåéü]+|[A-ZÆØÅ]+|[0-9]+", part)
        toks = [t if (len(t) > 1 and t.isupper()) else t.lower() for t in toks]
        if toks:
            parts.append(" ".join(toks))
    s = ", ".join(parts) or sosinavn
    return s[0].upper() + s[1:]


def num(s):
    try:
        v = float(s.strip().replace(",", "."))
    except ValueError:
        return None
    return int(v) if v == int(v) and "," not in s and "." not in s else v


def parse_gml(path):
    """-> (type info, {ptid: prop}, {ptid: [values]})"""
    root = ET.parse(path).getroot()

    def tags(el):
        out = {}
        for tv in el.iter(SC + "taggedValue"):
            out.setdefault(tv.get("tag"), tv.text)
        return out

    def doc(el):
        d = el.find(f"{XS}annotation/{XS}documentation")
        if d is None or d.text is None:
            return ""
        return re.sub(r"^\d+:\s*", "", d.text.strip())

    info, props, enums = {}, {}, {}
    for el in root.findall(XS + "element"):
        t = tags(el)
        if "NVDB_ID" in t:
            info = {"id": int(t["NVDB_ID"]), "navn": t.get("NVDB_navn"), "beskrivelse": doc(el),
                    "sosinavn": el.get("name")}
    for ct in root.findall(XS + "complexType"):
        seq = ct.find(f"{XS}complexContent/{XS}extension/{XS}sequence")
        if seq is None:
            continue
        for i, el in enumerate(seq.findall(XS + "element")):
            if el.get("name") == "lineærPosisjon":
                typ = el.get("type", "")
                info["stedfesting"] = "LINJE" if "Strekning" in typ else "PUNKT"
                continue
            t = tags(el)
            if "NVDB_ID" not in t:
                continue
            props[int(t["NVDB_ID"])] = {
                "navn": (t.get("NVDB_navn") or "").strip(), "beskrivelse": doc(el),
                "sosinavn": el.get("name"), "xsd_type": el.get("type"),
                "required": el.get("minOccurs") is None, "sort": i + 1}
    for st in root.findall(XS + "simpleType"):
        if not st.get("name", "").endswith("EnumerationType"):
            continue
        ptid = int(tags(st.find(XS + "annotation"))["NVDB_ID"])
        vals = []
        for en in st.iter(XS + "enumeration"):
            t = tags(en)
            vals.append({"id": int(t["NVDB_ID"]), "navn": t.get("NVDB_navn") or "",
                         "kortnavn": en.get("value"), "beskrivelse": doc(en)})
        enums[ptid] = vals
    return info, props, enums


def parse_codelist(path):
    root = ET.parse(path).getroot()
    ref = root.find(f".//{GMLNS}metaDataProperty//{{*}}referense")
    if ref is None:
        for el in root.iter():
            if el.tag.endswith("referense"):
                ref = el
    if ref is None or not (ref.text or "").strip().isdigit():
        return None, []
    vals = []
    for d in root.iter(GMLNS + "Definition"):
        ident = d.find(GMLNS + "identifier")
        name = d.find(GMLNS + "name")
        desc = d.find(GMLNS + "description")
        if ident is None or not (ident.text or "").strip().isdigit():
            continue
        vals.append({"id": int(ident.text), "navn": (name.text or "") if name is not None else "",
                     "beskrivelse": (desc.text or "").strip() if desc is not None else ""})
    return int(ref.text), vals


def main():
    ft = {int(i): n for i, n in read_csv("nvdb_ftMapping.csv")}
    pt_rows = [(int(f), int(p), n) for _, f, p, n in read_csv("nvdb_ptMapping.csv") if p]
    en_rows = [(int(p), int(e), n, fn) for p, e, n, fn in read_csv("nvdb_enMapping.csv")]
    npra = {int(k): v for k, v in json.load(open(os.path.join(SRC, "npra_vegobjekttype.json"), encoding="utf-8")).items()}
    v1list = {t["id"]: t for t in json.load(open(os.path.join(SRC, "objekttyper.json"), encoding="utf-8"))["vegObjektTyper"]}
    v1bom = json.load(open(os.path.join(SRC, "datakatalog-bomstasjoner.json"), encoding="utf-8"))
    datatyper = json.load(open(os.path.join(SRC, "v3", "vegobjekttype_datatyper.json"), encoding="utf-8"))
    dt_name = {d["id"]: d["navn"] for d in datatyper}

    v3 = {}
    for fn in os.listdir(os.path.join(SRC, "v3")):
        m = re.match(r"vegobjekttype_(\d+)\.json", fn)
        if m:
            v3[int(m.group(1))] = json.load(open(os.path.join(SRC, "v3", fn), encoding="utf-8"))
    gml = {}
    for fn in sorted(os.listdir(os.path.join(SRC, "gml"))):
        info, props, enums = parse_gml(os.path.join(SRC, "gml", fn))
        gml[info["id"]] = (info, props, enums)
    codelists = {}
    for fn in sorted(os.listdir(os.path.join(SRC, "codelists"))):
        ptid, vals = parse_codelist(os.path.join(SRC, "codelists", fn))
        if ptid is not None:
            codelists.setdefault(ptid, vals)

    # units seen in real data
    units = {}
    for d in v3.values():
        for e in d["egenskapstyper"]:
            if "enhet" in e:
                u = e["enhet"]
                units[u["kortnavn"]] = {"id": u["id"], "navn": u["navn"], "kortnavn": u["kortnavn"]}
    used_ids = {u["id"] for u in units.values()}
    next_unit = 9000
    for u in UNITS_FALLBACK:
        if u["kortnavn"] not in units:
            while next_unit in used_ids:
                next_unit += 1
            units[u["kortnavn"]] = dict(u, id=next_unit)
            used_ids.add(next_unit)

    # categories seen in real data
    kategorier = {}
    type_kategorier = {}
    for tid, d in v3.items():
        type_kategorier[tid] = []
        for k in d.get("kategorier", []):
            kategorier[k["id"]] = {"id": k["id"], "navn": k["navn"], "kortnavn": k["navn"].split(" - ")[0],
                                   "sorteringsnummer": k.get("nummer", 0), "beskrivelse": k["navn"],
                                   "startdato": "2012-05-08"}
            type_kategorier[tid].append(k["id"])
    alle = next((k for k in kategorier.values() if k["navn"] == "Alle"), None)

    # objektliste_dato seen on type references in v3 data
    oldato = {}
    for d in v3.values():
        if d.get("objektliste_dato"):
            oldato[d["id"]] = d["objektliste_dato"]
        for side in ("foreldre", "barn"):
            for r in d["relasjonstyper"][side]:
                t = r["innhold"]["type"]
                if t.get("objektliste_dato"):
                    oldato[t["id"]] = t["objektliste_dato"]

    props_by_type = {}
    for f, p, n in pt_rows:
        props_by_type.setdefault(f, []).append((p, n))
    values_by_prop = {}
    for p, e, n, fn in en_rows:
        values_by_prop.setdefault(p, []).append({"id": e, "kortnavn": n, "navn": fn})

    all_ids = sorted(set(npra) | set(v1list) | set(ft))
    types = []
    for tid in all_ids:
        d3 = v3.get(tid)
        g = gml.get(tid)
        v1 = v1list.get(tid)
        name = npra.get(tid) or (v1 and v1["navn"]) or (g and g[0]["navn"]) or words(ft.get(tid, str(tid)))
        besk = (d3 and d3.get("beskrivelse")) or (g and g[0]["beskrivelse"]) or (v1 and v1.get("beskrivelse")) or ""
        sosinavn = (d3 and d3.get("sosinavn")) or ft.get(tid) or re.sub(r"\W", "", name)
        # properties: union of csv, gml, v3, v1(45)
        plist = list(props_by_type.get(tid, []))
        known = {p for p, _ in plist}
        if g:
            for p, gp in g[1].items():
                if p not in known:
                    plist.append((p, gp["sosinavn"]))
                    known.add(p)
        v3props = {e["id"]: e for e in (d3["egenskapstyper"] if d3 else []) if e["id"] < 100000}
        for p, e in v3props.items():
            if p not in known:
                plist.append((p, e.get("sosinavn") or re.sub(r"\W", "", e["navn"])))
                known.add(p)
        v1props = {e["id"]: e for e in (v1bom["egenskapsTyper"] if tid == 45 else []) if e["id"] < 100000}
        egenskapstyper = []
        has_geom = set()
        for sort, (pid, sosi) in enumerate(plist, start=1):
            e3 = v3props.get(pid)
            gp = g[1].get(pid) if g else None
            e1 = v1props.get(pid)
            vals = {}
            for v in values_by_prop.get(pid, []):
                vals[v["id"]] = {"id": v["id"], "navn": v["navn"], "kortnavn": v["kortnavn"], "beskrivelse": ""}
            for v in codelists.get(pid, []):
                vals.setdefault(v["id"], {"id": v["id"], "navn": v["navn"], "kortnavn": v["navn"], "beskrivelse": ""})
                if v["beskrivelse"] and not vals[v["id"]]["beskrivelse"]:
                    vals[v["id"]]["beskrivelse"] = v["beskrivelse"]
            if e1:
                for v in (e1.get("enumVerdier") or {}).values():
                    vals.setdefault(v["id"], {"id": v["id"], "navn": v["verdi"], "kortnavn": v.get("kortVerdi") or v["verdi"],
                                              "beskrivelse": v.get("beskrivelse") or ""})
            if g and pid in g[2]:
                for v in g[2][pid]:
                    cur = vals.setdefault(v["id"], {"id": v["id"]})
                    cur.update({"navn": v["navn"], "kortnavn": v["kortnavn"]})
                    cur["beskrivelse"] = v["beskrivelse"] or cur.get("beskrivelse", "")
            std = {}
            if e3:
                for v in e3.get("tillatte_verdier", []):
                    cur = vals.setdefault(v["id"], {"id": v["id"]})
                    cur.update({"navn": str(v["verdi"]) if not isinstance(v["verdi"], str) else v["verdi"],
                                "kortnavn": v.get("kortnavn") or cur.get("kortnavn")})
                    if v.get("beskrivelse"):
                        cur["beskrivelse"] = v["beskrivelse"]
                    std[v["id"]] = (v.get("sorteringsnummer"), v.get("standardverdi", False))
            is_enum = bool(vals)
            # datatype
            if sosi in GEOMETRY or (gp and (gp["xsd_type"] or "").startswith("gml:")):
                xt = (gp or {}).get("xsd_type") or ""
                datatype = GEOMETRY.get(sosi) or (17 if "Point" in xt else 19 if "Surface" in xt else 18)
            elif is_enum:
                datatype = 31 if all(num(v["navn"]) is not None for v in vals.values()) else 30
            elif e3 and e3.get("egenskapstype") in ("Heltall", "Flyttall", "Tall"):
                datatype = 2
            elif e3 and e3.get("egenskapstype") == "Dato":
                datatype = 8
            elif e3 and e3.get("egenskapstype") == "Klokkeslett":
                datatype = 10
            elif e3 and e3.get("egenskapstype") == "Boolsk":
                datatype = 28
            elif e3 and e3.get("egenskapstype") == "Tekst":
                datatype = 1
            elif gp and gp["xsd_type"] in ("integer", "double"):
                datatype = 2
            elif gp and gp["xsd_type"] == "date":
                datatype = 8
            elif gp and gp["xsd_type"] == "time":
                datatype = 10
            elif gp and gp["xsd_type"] == "boolean":
                datatype = 28
            elif gp and gp["xsd_type"] == "string":
                datatype = 1
            elif e1 and e1.get("type") in ("Tall",):
                datatype = 2
            elif e1 and e1.get("type") in ("Dato",):
                datatype = 8
            elif e1 and e1.get("type") in ("Klokkeslett",):
                datatype = 10
            elif re.search(r"[Dd]ato", sosi):
                datatype = 8
            elif any(re.search(pat, sosi) for pat, _ in NUMBER_RULES):
                datatype = 2
            else:
                datatype = 1
            if datatype in (17, 18, 19):
                has_geom.add(datatype)
            navn = ((e3 and e3["navn"]) or (gp and gp["navn"]) or (e1 and e1["navn"])
                    or (GEOMETRY_NAME.get(datatype) if sosi in GEOMETRY else None) or words(sosi))
            besk_p = (e3 and e3.get("beskrivelse")) or (gp and gp["beskrivelse"]) or (e1 and e1.get("beskrivelse")) or ""
            if e3:
                vik = VIKTIGHET.get(e3.get("viktighet"), 4)
            elif gp:
                vik = 2 if gp["required"] else 4
            elif e1:
                vik = VIKTIGHET.get(e1.get("viktighet"), 4)
            else:
                vik = 4
            et = {
                "id": pid, "navn": navn, "beskrivelse": besk_p,
                "veiledning": (e3 and e3.get("veiledning")) or "",
                "datatype": datatype, "datatype_tekst": dt_name.get(datatype, "Tekst"),
                "liste": False,
                "sensitivitet": (e3 and e3.get("sensitivitet")) or (1 if SENSITIVE.search(sosi) else 0),
                "sorteringsnummer": (e3 and e3.get("sorteringsnummer")) or sort,
                "viktighet": vik, "viktighet_tekst": VIKTIGHET_TEKST[vik],
                "sosinavn": sosi,
                "sosinvdbnavn": (e3 and e3.get("sosinvdbnavn")) or (re.sub(r"[^\wæøåÆØÅ]", "", navn.title()) + "_" + str(pid)),
                "objektliste_dato": oldato.get(tid),
                "styringsparametere": {
                    "avledet": bool(e3 and e3.get("avledet")),
                    "obligatorisk_verdi": bool(e3 and e3.get("obligatorisk_verdi")) or vik == 1,
                    "tillatte_verdier_kortnavn_offisiell": False,
                    "ajourhold_snu": False, "fortegnsendring_snu": False,
                    "lengdeavhengig_snu": False, "verdi_beregnes_av_geometri": False,
                },
            }
            if datatype in (1, 30):
                fl = (e3 and e3.get("feltlengde"))
                if not fl:
                    fl = next((n for pat, n in TEXT_LENGTH if re.search(pat, sosi)), 50)
                    if is_enum:
                        fl = max(fl, max(len(v["navn"]) for v in vals.values()))
                et["feltlengde"] = fl
            if datatype in (2, 31):
                rule = next((r for pat, r in NUMBER_RULES if re.search(pat, sosi)), (False, None, 8, 2, 0, 999999))
                integer, unit, fl, dec, mn, mx = rule
                if e3 or gp:
                    xs = (gp or {}).get("xsd_type")
                    integer = (e3 and e3.get("egenskapstype") in ("Heltall", "Heltallenum")) or xs == "integer" or (integer and not e3)
                if e3 and e3.get("feltlengde"):
                    fl = e3["feltlengde"]
                dec = 0 if integer else ((e3 and e3.get("desimaler")) or dec or 2)
                if e3 and e3.get("min") is not None and isinstance(e3.get("min"), (int, float)):
                    mn = e3["min"]
                if e3 and isinstance(e3.get("maks"), (int, float)):
                    mx = e3["maks"]
                elif e3 and e3.get("maks") == "Infinity":
                    mx = None
                if datatype == 31:
                    mn = mx = None
                    ns = [num(v["navn"]) for v in vals.values()]
                    integer = all(isinstance(n, int) for n in ns)
                    dec = 0 if integer else max(len(str(n).split(".")[1]) for n in ns if isinstance(n, float))
                    fl = max(len(str(n)) for n in ns)
                et["feltlengde"] = fl
                et["desimaler"] = dec
                if mn is not None:
                    et["min"] = mn
                if mx is not None:
                    et["maks"] = mx
                for key in ("min_anbefalt", "maks_anbefalt"):
                    if e3 and isinstance(e3.get(key), (int, float)) and abs(e3[key]) != float("inf"):
                        et[key] = e3[key]
                unit_k = (e3 and e3.get("enhet", {}).get("kortnavn")) or unit
                if e3 and "enhet" not in e3 and e3.get("egenskapstype"):
                    unit_k = None if not unit else unit
                if unit_k:
                    et["enhet"] = units[unit_k] if unit_k in units else {"id": 0, "navn": unit_k, "kortnavn": unit_k}
            if datatype == 8:
                et["feltlengde"] = 8
            if is_enum:
                tv = []
                for i, v in enumerate(sorted(vals.values(), key=lambda v: (std.get(v["id"], (None,))[0] or 10**9, v["id"])), start=1):
                    s, sv = std.get(v["id"], (None, False))
                    item = {"id": v["id"], "navn": v["navn"], "kortnavn": v.get("kortnavn") or v["navn"],
                            "beskrivelse": v.get("beskrivelse", ""), "objektliste_dato": oldato.get(tid),
                            "sorteringsnummer": s or i, "standardverdi": bool(sv)}
                    if datatype == 31:
                        item["verdi"] = num(v["navn"])
                    tv.append(item)
                et["tillatte_verdier"] = tv
            egenskapstyper.append(et)

        # stedfesting (R7)
        sted = None
        if d3:
            s = d3["stedfesting"]
            sted = (s.get("innhold") or s).get("geometritype")
        sted = sted or (g and g[0].get("stedfesting")) or (v1 and v1.get("geometriType"))
        if not sted:
            sted = "LINJE" if 18 in has_geom else "PUNKT" if 17 in has_geom else "INGEN"
        sp = {"må_ha_mor": False, "sideposisjon_relevant": "NEI", "kjørefelt_relevant": "KAN",
              "tidsrom_relevant": True, "overlapp": sted != "LINJE", "avledet": False,
              "dekningsgrad": "", "ajourhold_i": "IKKE_TATT_STILLING",
              "ajourhold_splitt": "KAN_SPLITTES" if sted == "LINJE" else "KAN_IKKE_SPLITTES"}
        if d3:
            s = d3["stedfesting"]
            s = s.get("innhold") or s
            sp.update({"må_ha_mor": d3.get("må_ha_mor", False), "tidsrom_relevant": d3.get("tidsrom_relevant", True),
                       "avledet": d3.get("avledet", False),
                       "sideposisjon_relevant": s.get("sideposisjon_relevant", "NEI"),
                       "kjørefelt_relevant": s.get("kjørefelt_relevant", "KAN"),
                       "overlapp": s.get("overlapp_ok", sp["overlapp"]),
                       "ajourhold_splitt": s.get("vegnettsajourhold_splitt", sp["ajourhold_splitt"])})
        elif tid == 45:
            p = v1bom["styringsParametre"]
            sp.update({"må_ha_mor": p["kreverMorObjekt"], "tidsrom_relevant": p["tidsromRelevant"],
                       "overlapp": p["overlapp"], "avledet": p["avledet"], "dekningsgrad": p["dekningsgrad"] or "",
                       "kjørefelt_relevant": p["kjorefeltRelevant"], "sideposisjon_relevant": p["sidePosisjonRelevant"],
                       "ajourhold_i": p["ajourholdI"], "ajourhold_splitt": p["ajourholdSplitt"]})
        elif v1 and v1.get("styringsParametre", {}).get("dekningsgrad"):
            sp["dekningsgrad"] = v1["styringsParametre"]["dekningsgrad"]
        kats = type_kategorier.get(tid) or ([alle["id"]] if alle else [])
        types.append({
            "id": tid, "navn": name, "beskrivelse": besk, "veiledning": (d3 and d3.get("veiledning")) or "",
            "stedfesting": sted, "sosinavn": sosinavn,
            "sosinvdbnavn": (d3 and d3.get("sosinvdbnavn")) or f"{sosinavn}_{tid}",
            "objektliste_dato": oldato.get(tid), "sorteringsnummer": (d3 and d3.get("sorteringsnummer")) or 0,
            "kategorier": kats, "egenskapstyper": egenskapstyper,
            "relasjonstyper": {"foreldre": [], "barn": []}, "styringsparametere": sp,
        })

    by_id = {t["id"]: t for t in types}

    def add_rel(parent, child, rid, rtype, innenfor, mn, mx):
        if parent not in by_id or child not in by_id:
            return
        barn = by_id[parent]["relasjonstyper"]["barn"]
        if not any(r["type"]["id"] == child for r in barn):
            barn.append({"id": rid, "relasjonstype": rtype, "type": {"id": child, "navn": by_id[child]["navn"]},
                         "beskrivelse": "", "veiledning": "", "min": mn, "maks": mx,
                         "objektliste_dato": oldato.get(child), "innenfor_mor": innenfor})
        fore = by_id[child]["relasjonstyper"]["foreldre"]
        if not any(r["type"]["id"] == parent for r in fore):
            fore.append({"id": rid, "relasjonstype": rtype, "type": {"id": parent, "navn": by_id[parent]["navn"]},
                         "beskrivelse": "", "veiledning": "", "min": 0, "maks": 1,
                         "objektliste_dato": oldato.get(parent), "innenfor_mor": innenfor})

    for tid, d in v3.items():
        for side in ("barn", "foreldre"):
            for r in d["relasjonstyper"][side]:
                inn = r["innhold"]
                other = inn["type"]["id"]
                rid = inn["id"] - 200000 if inn["id"] >= 200000 else inn["id"]
                mn = r.get("minimalt_antall_verdier", 0)
                mx = r.get("maksimalt_antall_verdier", 999999)
                p, c = (tid, other) if side == "barn" else (other, tid)
                add_rel(p, c, rid, inn.get("relasjonstype", "KOMPOSISJON"), inn.get("innenfor_mor", "NEI"), mn, mx)
    for a in v1bom.get("assosiasjoner", []):
        inn = {"Ja": "JA", "Nei": "NEI"}.get(a.get("innenforMor") or "", "NEI")
        add_rel(45, a["vegObjektType"], a["relasjonsId"], (a.get("relasjonsType") or "Komposisjon").upper(), inn, 0, 999999)

    enheter = sorted(units.values(), key=lambda u: u["id"])
    out = {
        "datakatalog": VERSION,
        "kilder": "Compiled by tools/catalogue/build.py from the files in tools/catalogue/sources (see SOURCES.md).",
        "datatyper": [{"id": d["id"], "navn": d["navn"], "kortnavn": d["kortnavn"], "beskrivelse": d.get("beskrivelse", "")}
                      for d in datatyper],
        "enheter": enheter,
        "kategorier": sorted(kategorier.values(), key=lambda k: k["id"]),
        "vegobjekttyper": types,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    n_props = sum(len(t["egenskapstyper"]) for t in types)
    n_vals = sum(len(e.get("tillatte_verdier", [])) for t in types for e in t["egenskapstyper"])
    print(f"{len(types)} types, {n_props} property types, {n_vals} allowed values, "
          f"{len(enheter)} units, {len(kategorier)} categories -> {os.path.relpath(OUT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
