//! The form and site kind lists the engine exports its constants from (`FORM_*`, `SITE_*`).

use squall_trace::{FormKind, SiteKind};

#[test]
fn kind_lists_are_in_code_order_and_read_back() {
    for (i, k) in FormKind::ALL.iter().enumerate() {
        assert_eq!(*k as usize, i);
        assert_eq!(FormKind::from_code(i as i64).unwrap(), *k);
    }
    for (i, k) in SiteKind::ALL.iter().enumerate() {
        assert_eq!(*k as usize, i);
        assert_eq!(SiteKind::from_code(i as i64).unwrap(), *k);
    }
    assert!(FormKind::from_code(FormKind::ALL.len() as i64).is_err());
    assert!(SiteKind::from_code(SiteKind::ALL.len() as i64).is_err());
}
