//! The generator's references between entities: paths (`ChildOf.parent.Name.value`, several
//! hops, through `ChildOf.parent`, `Link.to` and the sparse `Target.who`), `depth`, `root`
//! and `descendant_of` (with and without a maximum depth; the ancestor a literal that is a
//! parent, any live entity, a stale one, `null`, a parameter, or an entity-valued
//! expression), as random leaves of any expression ([`Gen::relation_leaf`]) and as queries
//! shaped around them ([`Gen::relation_query`]).

use std::collections::BTreeMap;

use ecsdb::{Entity, Value};

use super::{Expect, G, Gen, Ty};
use crate::model::Model;

/// Per entity field (`"C.f"`): every entity it holds somewhere (live or stale), and the live
/// ones among them at the top of their chain (with a whole tree below).
pub(super) type LinkTargets = BTreeMap<String, Vec<Entity>>;

pub(super) fn link_targets(model: &Model) -> (LinkTargets, LinkTargets) {
    let mut link_targets: BTreeMap<String, Vec<Entity>> = BTreeMap::new();
    for comps in model.entities.values() {
        for (c, fields) in comps {
            for (f, v) in fields {
                if let Value::Entity(t) = v {
                    link_targets.entry(format!("{c}.{f}")).or_default().push(*t);
                }
            }
        }
    }
    for targets in link_targets.values_mut() {
        targets.sort();
        targets.dedup();
    }
    let mut link_tops: BTreeMap<String, Vec<Entity>> = BTreeMap::new();
    for (cf, targets) in &link_targets {
        let (c, f) = cf.split_once('.').expect("C.f");
        let top = |t: &Entity| {
            model.entities.get(t).is_some_and(|cs| {
                let up = cs.get(c).and_then(|fs| fs.iter().find(|(n, _)| n == f)).map(|(_, v)| v);
                !matches!(up, Some(Value::Entity(u)) if model.is_alive(*u))
            })
        };
        link_tops.insert(cf.clone(), targets.iter().copied().filter(top).collect());
    }
    (link_targets, link_tops)
}

/// The entity fields a walk or a path can follow, with how often each is picked.
const LINK_FIELDS: [(&str, u32); 3] = [("ChildOf.parent", 6), ("Link.to", 3), ("Target.who", 1)];

impl Gen<'_> {
    /// An entity field to follow.
    fn link_field(&mut self) -> String {
        let weights: Vec<u32> = LINK_FIELDS.iter().map(|(_, w)| *w).collect();
        LINK_FIELDS[self.rng.weighted(&weights)].0.to_string()
    }

    /// `.D.g` for a field `g` of type `ty` of any component `D`.
    fn path_end(&mut self, ty: Ty) -> Option<String> {
        let mut ends = Vec::new();
        for c in &self.schema.comps {
            for (f, t) in &c.fields {
                if Ty::of_field_type(*t) == ty {
                    ends.push(format!(".{}.{f}", c.name));
                }
            }
        }
        (!ends.is_empty()).then(|| self.rng.pick(&ends).clone())
    }

    /// A path to a value of type `ty` (`None`: to a component, as an object): a first entity
    /// field, zero to two more hops, then the last step.
    pub(super) fn path(&mut self, ty: Option<Ty>) -> Option<G> {
        let mut text = self.link_field();
        for _ in 0..self.rng.weighted(&[6, 3, 1]) {
            text += ".";
            text += &self.link_field();
        }
        match ty {
            Some(ty) => text += &self.path_end(ty)?,
            None => {
                let c = self.rng.pick(&self.schema.comps).name.clone();
                text += &format!(".{c}");
            }
        }
        Some(G::atom(text))
    }

    /// An ancestor for `descendant_of` over `field`, or a value to compare `field` with: mostly
    /// an entity `field` refers to somewhere; also any live one, a stale one, `null`, a
    /// parameter, an entity-valued expression.
    fn ancestor(&mut self, field: &str) -> String {
        match self.rng.weighted(&[25, 12, 6, 12, 12, 25]) {
            0 if self.link_targets.contains_key(field) => self.rng.pick(&self.link_targets[field]).to_string(),
            5 if self.link_tops.get(field).is_some_and(|ts| !ts.is_empty()) => {
                self.rng.pick(&self.link_tops[field]).to_string()
            }
            2 => self.kw("NULL"),
            // A parameter: a target of `field` mostly, else any entity literal's value.
            3 if self.allow_params => match self.link_targets.get(field) {
                Some(ts) if self.rng.chance(0.7) => {
                    let t = *self.rng.pick(ts);
                    self.bind(ecsdb::Value::Entity(t)).text
                }
                _ => self.param(Ty::Ent).text,
            },
            4 => match self.rng.below(4) {
                0 => "entity".to_string(),
                1 => {
                    let f = self.link_field();
                    format!("root({f})")
                }
                2 => self.link_field(),
                _ => self.path(Some(Ty::Ent)).map_or_else(|| "entity".to_string(), |g| g.text),
            },
            _ => self.entity_lit(),
        }
    }

    /// A maximum depth: mostly small, now and then 0, negative, null or an expression.
    fn max_depth(&mut self) -> String {
        match self.rng.weighted(&[70, 8, 5, 5, 6, 6]) {
            0 => self.rng.range(1, 4).to_string(),
            1 => "0".to_string(),
            2 => "-1".to_string(),
            3 => self.kw("NULL"),
            4 if self.allow_params => self.param(Ty::Int).text,
            _ => "Level.value % 4".to_string(),
        }
    }

    /// `descendant_of(F, ancestor [, max_depth])`.
    fn descendant_of(&mut self) -> G {
        let f = self.link_field();
        let a = self.ancestor(&f);
        let mut args = vec![G::atom(f), G::atom(a)];
        if self.rng.chance(0.4) {
            args.push(G::atom(self.max_depth()));
        }
        self.call("descendant_of", args)
    }

    /// A reference-following expression of type `ty`, when there is one of that type.
    pub(super) fn relation_leaf(&mut self, ty: Ty) -> Option<G> {
        match ty {
            Ty::Int if self.rng.chance(0.6) => {
                let f = self.link_field();
                Some(self.call("depth", vec![G::atom(f)]))
            }
            Ty::Ent if self.rng.chance(0.5) => {
                let f = self.link_field();
                Some(self.call("root", vec![G::atom(f)]))
            }
            Ty::Bool => Some(match self.rng.below(4) {
                0..=1 => self.descendant_of(),
                2 => {
                    let f = self.link_field();
                    let a = self.ancestor(&f);
                    G::op(format!("{f} = {a}"))
                }
                _ => self.path(Some(Ty::Bool))?,
            }),
            _ => self.path(Some(ty)),
        }
    }

    /// A condition on references: `descendant_of`, an entity field against an ancestor (`=`,
    /// `IN`: what a relation index answers), a depth bound, a root, a path.
    fn relation_cond(&mut self) -> String {
        match self.rng.weighted(&[35, 15, 10, 12, 10, 18]) {
            0 => self.descendant_of().text,
            1 => {
                let f = self.link_field();
                let a = self.ancestor(&f);
                format!("{f} {} {a}", self.rng.pick(&["=", "=", "!="]))
            }
            2 => {
                let f = self.link_field();
                let list: Vec<String> = (0..self.rng.range(1, 3)).map(|_| self.ancestor(&f)).collect();
                format!("{f} IN ({})", list.join(", "))
            }
            3 => {
                let f = self.link_field();
                format!("depth({f}) {} {}", self.rng.pick(&["=", "<", ">=", ">"]), self.rng.range(0, 3))
            }
            4 => {
                let f = self.link_field();
                let a = self.ancestor(&f);
                format!("root({f}) = {a}")
            }
            _ => self.cond(2).text,
        }
    }

    /// A predicate a skip index answers: on strings (`Name.value`), or on the reference
    /// field (a parent mostly).
    pub(super) fn skip_pred(&mut self) -> String {
        if self.rng.chance(0.5) {
            let t = self.str_lit();
            return match self.rng.below(3) {
                0 => format!("Name.value IN ({t}, {})", self.str_lit()),
                _ => format!("Name.value {} {t}", self.rng.pick(&["=", "<", ">=", "!="])),
            };
        }
        let parents = self.link_targets.get("ChildOf.parent").cloned().unwrap_or_default();
        let e = |g: &mut Gen| {
            if parents.is_empty() || g.rng.chance(0.2) { g.entity_lit() } else { g.rng.pick(&parents).to_string() }
        };
        match self.rng.below(3) {
            0 => format!("ChildOf.parent IN ({}, {})", e(self), e(self)),
            _ => {
                let op = *self.rng.pick(&["=", "=", "!=", ">="]);
                format!("ChildOf.parent {op} {}", e(self))
            }
        }
    }

    /// A query about references: items that follow them, a WHERE clause on them (mixed with
    /// other predicates), ORDER BY depth (parents first) or a path; now and then grouped by
    /// depth or root.
    pub fn relation_query(&mut self) -> super::Case {
        self.begin();
        self.focus(&["ChildOf", "Link", "Name", "Level", "Health"]);
        if self.rng.chance(0.2) {
            return self.relation_groups();
        }
        // Now and then only counted: the relation index then answers alone (an index-only
        // count), across the FROM forms and sparse layouts below.
        let counted = self.rng.chance(0.15);
        let mut items = vec!["entity".to_string()];
        if counted {
            items = vec!["count(*)".to_string()];
            if self.rng.chance(0.3) {
                items.push("count(*) * 2".to_string());
            }
        }
        for _ in 0..if counted { 0 } else { self.rng.range(1, 4) } {
            let item = match self.rng.below(7) {
                0 => {
                    let f = self.link_field();
                    format!("depth({f})")
                }
                1 => {
                    let f = self.link_field();
                    format!("root({f})")
                }
                2 => self.descendant_of().text,
                3 => self.link_field(),
                // A component reached through a path, as an object.
                4 => self.path(None).map_or_else(|| "entity".into(), |g| g.text),
                _ => {
                    let ty = *self.rng.pick(&[Ty::Str, Ty::Int, Ty::Float, Ty::Ent, Ty::Bool]);
                    self.path(Some(ty)).map_or_else(|| "entity".into(), |g| g.text)
                }
            };
            items.push(item);
        }
        let mut q = format!("SELECT {}", items.join(", "));
        if self.rng.chance(0.2) {
            q += &format!(" FROM {}", self.rng.pick(&["ChildOf", "!ChildOf", "?Link", "ChildOf | Link", "Name"]));
        }
        let mut conds = vec![self.relation_cond()];
        if self.rng.chance(0.4) {
            conds.push(if self.rng.chance(0.5) { self.relation_cond() } else { self.cond(1).text });
        }
        let op = if self.rng.chance(0.75) { " AND " } else { " OR " };
        q += &format!(" WHERE {}", conds.join(op));
        if !counted && self.rng.chance(0.6) {
            let f = self.link_field();
            let mut keys = vec![format!("depth({f}){}", self.direction())];
            if self.rng.chance(0.5) {
                let key = match self.rng.below(3) {
                    0 => "ChildOf.parent.Name.value".to_string(),
                    1 => format!("root({})", self.link_field()),
                    _ => self.key_expr(Ty::Str, 0).text,
                };
                keys.push(key + &self.direction());
            }
            q += &format!(" ORDER BY {}", keys.join(", "));
        }
        self.limit_offset(&mut q);
        self.case(q, Expect::Rows, "relations")
    }

    /// `SELECT depth(F) / root(F) / a path, count(*), … GROUP BY it`.
    fn relation_groups(&mut self) -> super::Case {
        let key = match self.rng.below(3) {
            0 => format!("depth({})", self.link_field()),
            1 => format!("root({})", self.link_field()),
            _ => self.path(Some(Ty::Str)).map_or_else(|| "depth(ChildOf.parent)".into(), |g| g.text),
        };
        let agg = *self.rng.pick(&["count(*)", "max(Level.value)", "min(depth(Link.to))", "count(ChildOf.parent)"]);
        let mut q = format!("SELECT {key}, {agg}");
        if self.rng.chance(0.5) {
            q += &format!(" WHERE {}", self.relation_cond());
        }
        q += &format!(" GROUP BY {key} ORDER BY {key}{}", self.direction());
        self.case(q, Expect::Rows, "relations grouped")
    }
}
