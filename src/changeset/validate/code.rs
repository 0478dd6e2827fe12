//! The codes a changeset's `feil` and `advarsel` carry (DOC-SKRIV2 `validering.md`), chosen
//! in one place: validation names a `Code`, `as_str` gives the API's text.

/// A validation (or processing) code. `as_str` is the exact `kode` of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    // the changeset as a whole
    InvalidEffectDate,
    NotCurrentCatalogueVersion,
    // rights
    MissingRight,
    // the object and its version
    UnknownObjectType,
    MissingIdOrVersion,
    ConflictBetweenObjects,
    ObjectDoesNotExist,
    ObjectIsClosed,
    WrongObjectType,
    VersionConflict,
    UnknownVersion,
    // properties
    UnknownPropertyType,
    InvalidMultipleValues,
    UnknownBinaryResource,
    InvalidGeometry,
    MissingRequiredProperties,
    MissingRecommendedProperties,
    InvalidValue,
    InvalidEnumValue,
    TooManyDecimals,
    AboveAbsoluteMaximum,
    BelowAbsoluteMinimum,
    ExceedsFieldLength,
    // location
    MissingLocation,
    InvalidPlacementKind,
    UnknownLink,
    InvalidPosition,
    PlacedOnConnectionLink,
    // associations
    InvalidAssociation,
    UnknownTempId,
    // processing (not validation): waiting for disk space
    StorageFull,
}

impl Code {
    /// Every code validation can report (not `StorageFull`, a processing warning).
    pub const VALIDATION: [Code; 30] = [
        Code::InvalidEffectDate,
        Code::NotCurrentCatalogueVersion,
        Code::MissingRight,
        Code::UnknownObjectType,
        Code::MissingIdOrVersion,
        Code::ConflictBetweenObjects,
        Code::ObjectDoesNotExist,
        Code::ObjectIsClosed,
        Code::WrongObjectType,
        Code::VersionConflict,
        Code::UnknownVersion,
        Code::UnknownPropertyType,
        Code::InvalidMultipleValues,
        Code::UnknownBinaryResource,
        Code::InvalidGeometry,
        Code::MissingRequiredProperties,
        Code::MissingRecommendedProperties,
        Code::InvalidValue,
        Code::InvalidEnumValue,
        Code::TooManyDecimals,
        Code::AboveAbsoluteMaximum,
        Code::BelowAbsoluteMinimum,
        Code::ExceedsFieldLength,
        Code::MissingLocation,
        Code::InvalidPlacementKind,
        Code::UnknownLink,
        Code::InvalidPosition,
        Code::PlacedOnConnectionLink,
        Code::InvalidAssociation,
        Code::UnknownTempId,
    ];

    /// The `kode` of the API.
    pub const fn as_str(self) -> &'static str {
        match self {
            Code::InvalidEffectDate => "UGYLDIG_EFFEKTDATO",
            Code::NotCurrentCatalogueVersion => "IKKE_GJELDENDE_DATAKATALOGVERSJON",
            Code::MissingRight => "MANGLER_TILGANG",
            Code::UnknownObjectType => "UKJENT_VEGOBJEKTTYPE",
            Code::MissingIdOrVersion => "MANGLER_NVDBID_ELLER_VERSJON",
            Code::ConflictBetweenObjects => "KONFLIKT_MELLOM_VEGOBJEKTER",
            Code::ObjectDoesNotExist => "VEGOBJEKTET_FINNES_IKKE",
            Code::ObjectIsClosed => "VEGOBJEKTET_ER_LUKKET",
            Code::WrongObjectType => "FEIL_VEGOBJEKTTYPE",
            Code::VersionConflict => "VERSJONSKONFLIKT",
            Code::UnknownVersion => "UKJENT_VERSJON",
            Code::UnknownPropertyType => "UKJENT_EGENSKAPSTYPE",
            Code::InvalidMultipleValues => "UGYLDIG_FLERVERDI",
            Code::UnknownBinaryResource => "UKJENT_BINÆRRESSURS",
            Code::InvalidGeometry => "UGYLDIG_GEOMETRI",
            Code::MissingRequiredProperties => "MANGLER_OBLIGATORISKE_EGENSKAPER",
            Code::MissingRecommendedProperties => "MANGLER_ANBEFALTE_EGENSKAPER",
            Code::InvalidValue => "UGYLDIG_VERDI",
            Code::InvalidEnumValue => "UGYLDIG_ENUMVERDI",
            Code::TooManyDecimals => "FOR_MANGE_DESIMALER",
            Code::AboveAbsoluteMaximum => "STØRRE_ENN_ABSOLUTT_MAKSIMUM",
            Code::BelowAbsoluteMinimum => "MINDRE_ENN_ABSOLUTT_MINIMUM",
            Code::ExceedsFieldLength => "OVERSKRIDER_FELTLENGDE",
            Code::MissingLocation => "MANGLER_LOKASJON",
            Code::InvalidPlacementKind => "UGYLDIG_STEDFESTING",
            Code::UnknownLink => "UKJENT_LENKE",
            Code::InvalidPosition => "UGYLDIG_POSISJON",
            Code::PlacedOnConnectionLink => "STEDFESTET_PÅ_KONNEKTERINGSLENKE",
            Code::InvalidAssociation => "UGYLDIG_ASSOSIASJON",
            Code::UnknownTempId => "UKJENT_TEMPID",
            Code::StorageFull => "LAGRINGSPLASS_FULL",
        }
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Code;
    use std::collections::HashSet;

    /// The API texts are distinct, upper case, and the list covers every variant but the
    /// processing warning.
    #[test]
    fn codes_are_distinct_api_texts() {
        let texts: HashSet<&str> = Code::VALIDATION.iter().map(|c| c.as_str()).collect();
        assert_eq!(texts.len(), Code::VALIDATION.len());
        assert!(!texts.contains(Code::StorageFull.as_str()));
        for t in texts {
            assert_eq!(t, t.to_uppercase(), "{t}");
        }
        assert_eq!(Code::StorageFull.to_string(), "LAGRINGSPLASS_FULL");
    }
}
