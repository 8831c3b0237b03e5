//! SITE_READS: what sites' values are computed from (`squall_trace::SiteReads`, the data the
//! `origin` query walks) round-trips as optional data, written with the sites it describes.

mod common;

use std::sync::Arc;

use squall_store::{read, Header, Writer};
use squall_trace::{Coord, SiteReads};

fn reads(line: u32, names: &[&str], attr: Option<&str>) -> SiteReads {
    SiteReads {
        span: Coord { line, col: 4, end_line: line, end_col: 20 },
        names: names.iter().map(|n| Arc::from(*n)).collect(),
        attr: attr.map(Arc::from),
    }
}

#[test]
fn site_reads_round_trip_with_the_sites_they_describe() {
    let all = common::forms();
    assert!(all.sites().len() >= 3, "the fixture has sites");
    let mut part = squall_trace::Forms::new();
    for f in all.forms() {
        part.add_form(f.clone()).unwrap();
    }
    part.add_site(all.site(0).unwrap().clone()).unwrap();
    part.set_site_reads(0, reads(2, &["price", "qty"], None)).unwrap();
    let mut w = Writer::new(Vec::new(), &Header::default()).unwrap();
    w.forms(&part).unwrap();
    for s in &all.sites()[1..] {
        part.add_site(s.clone()).unwrap();
    }
    // Site 1 says nothing; site 2 reads an attribute.
    part.set_site_reads(2, reads(7, &["item"], Some("price"))).unwrap();
    w.forms(&part).unwrap();
    let rec = read(&w.finish(0, &[]).unwrap()).unwrap();
    assert_eq!(rec.forms.sites(), all.sites());
    assert_eq!(rec.forms.site_reads(0), Some(&reads(2, &["price", "qty"], None)));
    assert_eq!(rec.forms.site_reads(1), None);
    assert_eq!(rec.forms.site_reads(2), Some(&reads(7, &["item"], Some("price"))));
}

#[test]
fn reads_of_an_unknown_site_are_refused() {
    let mut forms = squall_trace::Forms::new();
    assert!(forms.set_site_reads(0, reads(1, &[], None)).is_err());
}
