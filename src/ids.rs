//! Identifiers as types of their own, so a link id is never taken for an object id or a type
//! id. They are what the generation's query methods take and give (`g.object_row(TypeId,
//! ObjectId)`, `g.locate_link(LinkId, ..)`, `NetworkPosition::link_id`, `SegmentRow::link_id`);
//! the columns store the bare numbers (`u64`/`u32` arrays, as Parquet holds them). On the wire
//! they are the bare numbers too (`serde(transparent)`).

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl $name {
            /// The bare number (as the columns and the API hold it).
            pub fn get(self) -> $inner {
                self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }

        impl From<$inner> for $name {
            fn from(v: $inner) -> Self {
                $name(v)
            }
        }
    };
}

id_type!(
    /// A road link (veglenkesekvens) id.
    LinkId(u64)
);
id_type!(
    /// A road object id (nvdbId).
    ObjectId(u64)
);
id_type!(
    /// A road object type id (vegobjekttype).
    TypeId(u32)
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_and_serialise_as_their_numbers() {
        assert_eq!(LinkId(1000001).to_string(), "1000001");
        assert_eq!(serde_json::to_string(&ObjectId(7)).unwrap(), "7");
        assert_eq!(serde_json::from_str::<TypeId>("105").unwrap(), TypeId(105));
        assert!(ObjectId(1) < ObjectId(2));
    }
}
