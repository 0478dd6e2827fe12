//! National route segments (riksvegruter) of the national transport plan. Each route names the
//! trunk roads (category, number) it follows and the counties it runs through; a road link is on
//! a route when its road and county match. The road numbers are the real trunk roads; the
//! generator uses exactly these numbers for its E and R roads.

#[derive(Debug, Clone)]
pub struct NationalRoute {
    /// e.g. "2A"
    pub number: String,
    /// e.g. "RUTE2A"
    pub name: String,
    pub description: String,
    /// e.g. "2014-2023"
    pub period: String,
    /// (category letter as byte, road number)
    pub roads: Vec<(u8, u32)>,
    pub counties: Vec<u8>,
}

impl NationalRoute {
    pub fn covers(&self, category: u8, number: u32, county: u8) -> bool {
        self.counties.contains(&county)
            && self
                .roads
                .iter()
                .any(|&(c, n)| c == category && n == number)
    }

    /// The filter form of the API: name + space + period, e.g. `RUTE2A 2014-2023`.
    pub fn filter_key(&self) -> String {
        format!("{} {}", self.name, self.period)
    }
}

/// (number, description, roads, counties)
type RouteRow = (
    &'static str,
    &'static str,
    &'static [(u8, u32)],
    &'static [u8],
);

const ROUTES: &[RouteRow] = &[
    ("1", "E6 Oslo - Svinesund", &[(b'E', 6)], &[3, 31, 32]),
    ("2A", "E6 Oslo - Trondheim", &[(b'E', 6)], &[34, 50]),
    ("2B", "E16 Oslo - Bergen", &[(b'E', 16)], &[32, 33, 34, 46]),
    (
        "2C",
        "E134 Drammen - Haugesund",
        &[(b'E', 134)],
        &[33, 39, 40, 46, 11],
    ),
    (
        "3",
        "E18 Oslo - Kristiansand",
        &[(b'E', 18)],
        &[3, 32, 33, 39, 40, 42],
    ),
    (
        "4A",
        "E39 Kristiansand - Stavanger",
        &[(b'E', 39)],
        &[42, 11],
    ),
    ("4B", "Rv9 Kristiansand - Haukeli", &[(b'R', 9)], &[42, 40]),
    (
        "5A",
        "E39 Stavanger - Bergen - Ålesund",
        &[(b'E', 39)],
        &[46, 15],
    ),
    (
        "5B",
        "Rv13 og Rv15 Vestlandet",
        &[(b'R', 13), (b'R', 15)],
        &[11, 46, 15],
    ),
    ("6A", "E39 Ålesund - Trondheim", &[(b'E', 39)], &[50]),
    ("6B", "E136 Dombås - Ålesund", &[(b'E', 136)], &[34, 15]),
    ("6C", "Rv3 Kolomoen - Ulsberg", &[(b'R', 3)], &[34, 50]),
    ("7", "E6 Trondheim - Fauske", &[(b'E', 6)], &[18]),
    ("7B", "E14 Stjørdal - Storlien", &[(b'E', 14)], &[50]),
    ("8A", "E6 Fauske - Nordkapp", &[(b'E', 6)], &[55, 56]),
    ("8B", "E10 Lofoten - Bjerkvik", &[(b'E', 10)], &[18, 55]),
    ("8C", "E8 Tromsø - Skibotn", &[(b'E', 8)], &[55]),
    (
        "8D",
        "E45 og E75 Finnmark",
        &[(b'E', 45), (b'E', 75)],
        &[56],
    ),
    ("9", "Rv7 Hønefoss - Bergen", &[(b'R', 7)], &[33, 46]),
    ("10", "Rv4 Oslo - Gjøvik", &[(b'R', 4)], &[3, 32, 34]),
];

pub(super) fn all() -> Vec<NationalRoute> {
    ROUTES
        .iter()
        .map(|(number, description, roads, counties)| NationalRoute {
            number: number.to_string(),
            name: format!("RUTE{number}"),
            description: description.to_string(),
            period: "2014-2023".to_string(),
            roads: roads.to_vec(),
            counties: counties.to_vec(),
        })
        .collect()
}
