use super::*;
use proptest::prelude::*;

fn parse(s: &str) -> SystemRefFilter {
    SystemRefFilter::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

#[test]
fn parses_the_successors_spellings() {
    let full = SystemRefFilter {
        category: b'E',
        phase: Some(b'V'),
        number: Some(6),
        sections: Some((1, 1)),
        subsection: Some(1),
        metres: Some((200, 200)),
        ..Default::default()
    };
    for s in [
        "EV6S1D1m200",
        "EV6 S1D1 m200",
        "ev6s1d1m200",
        " EV6 S1 D1 M200 ",
    ] {
        assert_eq!(parse(s), full, "{s}");
    }
    assert_eq!(
        parse("EV6S1D1m0-500").metres,
        Some((0, 500)),
        "a metre range"
    );
    let partial = parse("EV6");
    assert_eq!((partial.number, partial.sections), (Some(6), None));
    assert_eq!(parse("EV6S1").sections, Some((1, 1)));
    assert_eq!(parse("FV911S1-2").sections, Some((1, 2)));
    assert_eq!(parse("E6").phase, None);
    assert_eq!(parse("K").number, None);
    assert_eq!(parse("5001 KV1234 S1D1").municipality, Some(5001));
}

#[test]
fn bad_forms_are_refused_with_their_problem() {
    let problem = |s: &str| match SystemRefFilter::parse(s) {
        Err(EngineError::Invalid(Invalid::SystemRef { problem, .. })) => problem,
        other => panic!("{s}: {other:?}"),
    };
    assert_eq!(problem(""), SystemRefProblem::Empty);
    assert_eq!(problem("X6"), SystemRefProblem::MissingCategory);
    assert_eq!(problem("EVS1"), SystemRefProblem::MissingNumber);
    assert_eq!(problem("EV6S"), SystemRefProblem::ExpectedSection);
    assert_eq!(problem("EV6S1D"), SystemRefProblem::ExpectedSubsection);
    assert_eq!(problem("EV6S1D1m"), SystemRefProblem::ExpectedMeter);
    assert_eq!(
        problem("EV6S1D1m500-200"),
        SystemRefProblem::RangeEndsBeforeStart
    );
    assert_eq!(
        problem("EV18S41D1M2403KD3M0-35"),
        SystemRefProblem::UnexpectedText("KD3M0-35".into())
    );
    assert!(matches!(
        SystemRefFilter::parse_point("EV6S1D1"),
        Err(EngineError::Invalid(Invalid::SystemRef {
            problem: SystemRefProblem::IncompletePoint,
            ..
        }))
    ));
}

#[test]
fn kortform_is_the_successors() {
    let k = SystemKey {
        category: b'E',
        phase: b'V',
        number: 6,
        section: 1,
        subsection: 1,
        arm: false,
        separate: 0,
        traffic_group: b'K',
        against: false,
        system_object: (0, 0),
        section_object: (0, 0),
    };
    assert_eq!(k.stretch(200, 500), "EV6 S1D1 m200-500");
    assert_eq!(k.stretch(200, 200), "EV6 S1D1 m200");
    assert_eq!(k.point(0), "EV6 S1D1 m0");
}

/// Any filter value the grammar can express.
fn filter() -> impl Strategy<Value = SystemRefFilter> {
    let range = |max: u32| (0..max, 0..max).prop_map(|(a, b)| (a.min(b), a.max(b)));
    (
        proptest::option::of(0u16..10_000),
        prop::sample::select(CATEGORIES.to_vec()),
        proptest::option::of(prop::sample::select(PHASES.to_vec())),
        proptest::option::of(any::<u32>()),
        proptest::option::of(range(1000)),
        proptest::option::of(0u32..100),
        proptest::option::of(prop_oneof![
            range(u32::MAX),
            (0..u32::MAX).prop_map(|m| (m, m))
        ]),
    )
        .prop_map(
            |(municipality, category, phase, number, sections, d, metres)| {
                // what may follow what: sections after a number, delstrekning after one strekning,
                // metres after a delstrekning
                let sections = number.and(sections);
                let subsection = sections.filter(|(a, b)| a == b).and(d);
                let metres = subsection.and(metres);
                SystemRefFilter {
                    municipality,
                    category,
                    phase,
                    number,
                    sections,
                    subsection,
                    metres,
                }
            },
        )
}

proptest! {
    /// Any reference prints to its short form and parses back to the same value, also
    /// without spaces and in lower case.
    #[test]
    fn short_form_parses_back(f in filter()) {
        let s = f.short();
        prop_assert_eq!(&SystemRefFilter::parse(&s).unwrap(), &f, "{}", s);
        let squeezed: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        prop_assert_eq!(&SystemRefFilter::parse(&squeezed.to_lowercase()).unwrap(), &f);
    }

    /// A row's kortform parses to a filter the row matches (its key and metres).
    #[test]
    fn kortform_parses_to_what_it_names(
        category in prop::sample::select(CATEGORIES.to_vec()),
        phase in prop::sample::select(PHASES.to_vec()),
        number in any::<u32>(), section: u16, subsection: u16,
        a: u32, b: u32,
    ) {
        let k = SystemKey { category, phase, number, section, subsection, arm: false,
            separate: 0, traffic_group: b'K', against: false, system_object: (0, 0),
            section_object: (0, 0) };
        let (from, to) = (a.min(b), a.max(b));
        let f = SystemRefFilter::parse(&k.stretch(from, to)).unwrap();
        prop_assert_eq!(f, SystemRefFilter {
            municipality: None,
            category,
            phase: Some(phase),
            number: Some(number),
            sections: Some((section.into(), section.into())),
            subsection: Some(subsection.into()),
            metres: Some((from, to)),
        });
    }

    /// No text makes the parser panic.
    #[test]
    fn any_text_parses_or_is_refused(s in "\\PC{0,40}") {
        let _ = SystemRefFilter::parse(&s);
    }
}
