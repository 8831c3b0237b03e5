//! The predicate's text read into an [`Expr`]: a tokenizer and a recursive-descent parser of
//! the subset of Python's expression grammar the language has (see the module doc of
//! `crate::predicate` for why it is written by hand).

use crate::snapshot::{SeqKind, Snap};

/// The functions a predicate may call, each with one argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Len,
    Abs,
    Str,
    TypeName,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
    Is,
    IsNot,
}

/// A read predicate. Constants are [`Snap`]s, so that they compare with recorded values by the
/// same code.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Const(Snap),
    Name(String),
    /// A list or tuple display (`[1, 2]`, `(1, 2)`).
    Display(SeqKind, Vec<Expr>),
    Attr(Box<Expr>, String),
    /// An item with a constant key (`d['k']`, `xs[0]`, `xs[-1]`).
    Item(Box<Expr>, Snap),
    Call(Func, Box<Expr>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
    /// `a < b <= c`: each operator between its neighbours, `b` evaluated once.
    Compare(Box<Expr>, Vec<(CmpOp, Expr)>),
}

/// Why a text is not a predicate; `crate::predicate::PredicateError` words it with the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Not an expression at all: what went wrong, at which character (0-based).
    Syntax {
        what: String,
        at: usize,
    },
    /// A Python construct the language does not have, by its `ast` node name (`ListComp`).
    Uses(&'static str),
    UnderscoreAttr(String),
    KeyNotConstant,
    BadCall,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Name(String),
    Num(Snap),
    Str(String),
    Bytes(Vec<u8>),
    /// An f-string: the language has none.
    FString,
    Op(&'static str),
    End,
}

const OPS: [&str; 36] = [
    "**=", "//=", ">>=", "<<=", "...", "==", "!=", "<=", ">=", "//", "**", "->", ":=", "<<", ">>", "+=", "-=", "*=",
    "/=", "%=", "<", ">", "+", "-", "*", "/", "%", "(", ")", "[", "]", "{", "}", ",", ".", ":",
];
const SINGLE: &str = "~&|^@=;!";

struct Lexer<'t> {
    text: &'t str,
    pos: usize,
}

fn syntax(what: impl Into<String>, at: usize) -> ParseError {
    ParseError::Syntax { what: what.into(), at }
}

impl<'t> Lexer<'t> {
    fn rest(&self) -> &'t str {
        &self.text[self.pos..]
    }

    /// The next token and where it starts.
    fn next(&mut self) -> Result<(Tok, usize), ParseError> {
        let trimmed = self.rest().trim_start();
        self.pos = self.text.len() - trimmed.len();
        let start = self.pos;
        let Some(c) = trimmed.chars().next() else { return Ok((Tok::End, start)) };
        if c.is_alphabetic() || c == '_' {
            let end = trimmed.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(trimmed.len());
            let word = &trimmed[..end];
            let after = trimmed[end..].chars().next();
            if matches!(after, Some('\'' | '"')) {
                let lower = word.to_ascii_lowercase();
                if ["r", "u", "b", "br", "rb", "f", "fr", "rf"].contains(&lower.as_str()) {
                    self.pos += end;
                    return self.string(start, lower.contains('r'), lower.contains('b'), lower.contains('f'));
                }
            }
            self.pos += end;
            return Ok((Tok::Name(word.to_string()), start));
        }
        if c.is_ascii_digit() || (c == '.' && trimmed[1..].starts_with(|d: char| d.is_ascii_digit())) {
            return self.number(start);
        }
        if c == '\'' || c == '"' {
            return self.string(start, false, false, false);
        }
        if let Some(op) = OPS.iter().find(|op| trimmed.starts_with(**op)) {
            self.pos += op.len();
            return Ok((Tok::Op(op), start));
        }
        if let Some(i) = SINGLE.find(c) {
            self.pos += 1;
            return Ok((Tok::Op(&SINGLE[i..=i]), start));
        }
        Err(syntax(format!("`{c}` is not part of an expression"), start))
    }

    fn number(&mut self, start: usize) -> Result<(Tok, usize), ParseError> {
        let t = self.rest();
        let end = t.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.')).unwrap_or(t.len());
        // An exponent's sign belongs to the number (`1e-3`).
        let mut end = end;
        if t[..end].ends_with(['e', 'E']) && !t.starts_with("0x") && t[end..].starts_with(['+', '-']) {
            end += 1 + t[end + 1..].find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len() - end - 1);
        }
        let raw = &t[..end];
        self.pos += end;
        let digits: String = raw.chars().filter(|&c| c != '_').collect();
        let bad = || syntax(format!("`{raw}` is not a number"), start);
        if digits.ends_with(['j', 'J']) {
            return Err(ParseError::Uses("complex constant"));
        }
        let radix = match digits.get(..2).map(str::to_ascii_lowercase).as_deref() {
            Some("0x") => 16,
            Some("0o") => 8,
            Some("0b") => 2,
            _ => 10,
        };
        if radix != 10 {
            let v = i128::from_str_radix(&digits[2..], radix).map_err(|_| bad())?;
            return Ok((Tok::Num(int_snap(v)), start));
        }
        if digits.contains(['.', 'e', 'E']) {
            return digits.parse::<f64>().map(|f| (Tok::Num(Snap::Float(f)), start)).map_err(|_| bad());
        }
        if !digits.bytes().all(|b| b.is_ascii_digit()) || (digits.len() > 1 && digits.starts_with('0')) {
            return Err(bad());
        }
        Ok((
            Tok::Num(match digits.parse::<i64>() {
                Ok(i) => Snap::Int(i),
                Err(_) => Snap::BigInt(digits.trim_start_matches('0').to_string()),
            }),
            start,
        ))
    }

    fn string(&mut self, start: usize, raw: bool, bytes: bool, f: bool) -> Result<(Tok, usize), ParseError> {
        let t = self.rest();
        let quote = t.chars().next().unwrap_or('\'');
        if t.starts_with(&quote.to_string().repeat(3)) {
            return Err(syntax("triple-quoted strings are not read: write the text in one pair of quotes", start));
        }
        let mut out = String::new();
        let mut chars = t.char_indices().skip(1);
        while let Some((i, c)) = chars.next() {
            match c {
                c if c == quote => {
                    self.pos += i + 1;
                    let tok = if f {
                        Tok::FString
                    } else if bytes {
                        if !out.is_ascii() {
                            return Err(syntax("a bytes literal holds ASCII characters only", start));
                        }
                        Tok::Bytes(out.chars().map(|c| c as u32 as u8).collect())
                    } else {
                        Tok::Str(out)
                    };
                    return Ok((tok, start));
                }
                '\\' if !raw => {
                    let Some((_, e)) = chars.next() else { break };
                    let mut hex = |n: usize| -> Result<char, ParseError> {
                        let code: String = (0..n).filter_map(|_| chars.next().map(|(_, c)| c)).collect();
                        u32::from_str_radix(&code, 16)
                            .ok()
                            .filter(|_| code.len() == n)
                            .and_then(|u| if bytes { u8::try_from(u).ok().map(char::from) } else { char::from_u32(u) })
                            .ok_or_else(|| syntax(format!("`\\{e}{code}` is not an escape"), start + i))
                    };
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        '0' => out.push('\0'),
                        'a' => out.push('\x07'),
                        'b' => out.push('\x08'),
                        'f' => out.push('\x0c'),
                        'v' => out.push('\x0b'),
                        '\\' | '\'' | '"' => out.push(e),
                        'x' => out.push(hex(2)?),
                        'u' if !bytes => out.push(hex(4)?),
                        'U' if !bytes => out.push(hex(8)?),
                        other => {
                            out.push('\\');
                            out.push(other);
                        }
                    }
                }
                c => out.push(c),
            }
        }
        Err(syntax("the string is not closed", start))
    }
}

fn int_snap(v: i128) -> Snap {
    i64::try_from(v).map_or_else(|_| Snap::BigInt(v.to_string()), Snap::Int)
}

/// The longest text read, and the deepest nesting of its expressions: the parser and the
/// evaluator recurse by nesting, on threads with small stacks (the UI server's).
/// (A level of parentheses is a dozen of the parser's frames, deeper in a debug build.)
const MAX_TEXT: usize = 10_000;
const MAX_DEPTH: usize = 100;
const MAX_NESTING: usize = 30;

/// Reads `text` (not empty) as a predicate.
pub fn parse(text: &str) -> Result<Expr, ParseError> {
    if text.len() > MAX_TEXT {
        return Err(syntax(format!("it is longer than {MAX_TEXT} bytes"), MAX_TEXT));
    }
    let mut p = Parser { lex: Lexer { text, pos: 0 }, tok: Tok::End, at: 0, nesting: 0 };
    p.bump()?;
    let e = p.expr()?;
    if depth(&e) > MAX_DEPTH {
        return Err(syntax(format!("it nests more than {MAX_DEPTH} operations deep"), 0));
    }
    match &p.tok {
        Tok::End => Ok(e),
        Tok::Op(",") => Err(ParseError::Uses("Tuple")),
        Tok::Name(n) if n == "if" => Err(ParseError::Uses("IfExp")),
        Tok::Name(n) if n == "for" => Err(ParseError::Uses("GeneratorExp")),
        Tok::Op(":=") => Err(ParseError::Uses("NamedExpr")),
        Tok::Op("=") => Err(syntax("`=` assigns: compare with `==`", p.at)),
        _ => Err(p.unexpected("the end of the predicate")),
    }
}

struct Parser<'t> {
    lex: Lexer<'t>,
    tok: Tok,
    at: usize,
    /// How deep the parser's own recursion is (parentheses, `not`, unary minus).
    nesting: usize,
}

/// The depth of `e`'s tree, counted without recursion (a long `a + a + ...` is deep).
fn depth(e: &Expr) -> usize {
    let mut deepest = 0;
    let mut todo = vec![(e, 1)];
    while let Some((e, d)) = todo.pop() {
        deepest = deepest.max(d);
        match e {
            Expr::Const(_) | Expr::Name(_) => {}
            Expr::Display(_, items) | Expr::And(items) | Expr::Or(items) => {
                todo.extend(items.iter().map(|i| (i, d + 1)))
            }
            Expr::Attr(x, _) | Expr::Item(x, _) | Expr::Call(_, x) | Expr::Not(x) | Expr::Neg(x) => {
                todo.push((x, d + 1))
            }
            Expr::Bin(_, a, b) => todo.extend([(&**a, d + 1), (&**b, d + 1)]),
            Expr::Compare(first, rest) => {
                todo.push((first, d + 1));
                todo.extend(rest.iter().map(|(_, x)| (x, d + 1)));
            }
        }
    }
    deepest
}

const KEYWORDS: [&str; 10] = ["and", "or", "not", "in", "is", "if", "else", "for", "lambda", "None"];

impl Parser<'_> {
    /// `f`, one level deeper in the parser's recursion.
    fn nested(&mut self, f: fn(&mut Self) -> Result<Expr, ParseError>) -> Result<Expr, ParseError> {
        if self.nesting >= MAX_NESTING {
            return Err(syntax(format!("it nests more than {MAX_NESTING} levels deep"), self.at));
        }
        self.nesting += 1;
        let e = f(self);
        self.nesting -= 1;
        e
    }

    fn bump(&mut self) -> Result<Tok, ParseError> {
        let (tok, at) = self.lex.next()?;
        self.at = at;
        Ok(std::mem::replace(&mut self.tok, tok))
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(&self.tok, Tok::Op(o) if *o == op)
    }

    fn is_name(&self, word: &str) -> bool {
        matches!(&self.tok, Tok::Name(n) if n == word)
    }

    fn eat_op(&mut self, op: &str) -> Result<bool, ParseError> {
        let yes = self.is_op(op);
        if yes {
            self.bump()?;
        }
        Ok(yes)
    }

    fn eat_name(&mut self, word: &str) -> Result<bool, ParseError> {
        let yes = self.is_name(word);
        if yes {
            self.bump()?;
        }
        Ok(yes)
    }

    fn unexpected(&self, wanted: &str) -> ParseError {
        let found = match &self.tok {
            Tok::End => "the end".to_string(),
            Tok::Op(o) => format!("`{o}`"),
            Tok::Name(n) => format!("`{n}`"),
            Tok::Num(_) | Tok::Str(_) | Tok::Bytes(_) | Tok::FString => "a constant".to_string(),
        };
        syntax(format!("expected {wanted}, found {found}"), self.at)
    }

    fn expect_op(&mut self, op: &'static str) -> Result<(), ParseError> {
        if self.eat_op(op)? {
            Ok(())
        } else {
            Err(self.unexpected(&format!("`{op}`")))
        }
    }

    fn expr(&mut self) -> Result<Expr, ParseError> {
        if self.is_name("lambda") {
            return Err(ParseError::Uses("Lambda"));
        }
        if self.is_name("yield") {
            return Err(ParseError::Uses("Yield"));
        }
        let e = self.or()?;
        if self.is_name("if") {
            return Err(ParseError::Uses("IfExp"));
        }
        if self.is_op(":=") {
            return Err(ParseError::Uses("NamedExpr"));
        }
        Ok(e)
    }

    fn or(&mut self) -> Result<Expr, ParseError> {
        let mut parts = vec![self.and()?];
        while self.eat_name("or")? {
            parts.push(self.and()?);
        }
        Ok(if parts.len() == 1 { parts.pop().expect("one part") } else { Expr::Or(parts) })
    }

    fn and(&mut self) -> Result<Expr, ParseError> {
        let mut parts = vec![self.not()?];
        while self.eat_name("and")? {
            parts.push(self.not()?);
        }
        Ok(if parts.len() == 1 { parts.pop().expect("one part") } else { Expr::And(parts) })
    }

    fn not(&mut self) -> Result<Expr, ParseError> {
        if self.eat_name("not")? {
            return Ok(Expr::Not(Box::new(self.nested(Self::not)?)));
        }
        self.comparison()
    }

    fn cmp_op(&mut self) -> Result<Option<CmpOp>, ParseError> {
        let op = match &self.tok {
            Tok::Op("==") => CmpOp::Eq,
            Tok::Op("!=") => CmpOp::Ne,
            Tok::Op("<") => CmpOp::Lt,
            Tok::Op("<=") => CmpOp::Le,
            Tok::Op(">") => CmpOp::Gt,
            Tok::Op(">=") => CmpOp::Ge,
            Tok::Name(n) if n == "in" => CmpOp::In,
            Tok::Name(n) if n == "is" => {
                self.bump()?;
                return Ok(Some(if self.eat_name("not")? { CmpOp::IsNot } else { CmpOp::Is }));
            }
            Tok::Name(n) if n == "not" => {
                self.bump()?;
                if !self.eat_name("in")? {
                    return Err(self.unexpected("`in` after `not`"));
                }
                return Ok(Some(CmpOp::NotIn));
            }
            _ => return Ok(None),
        };
        self.bump()?;
        Ok(Some(op))
    }

    fn comparison(&mut self) -> Result<Expr, ParseError> {
        let first = self.arith()?;
        let mut rest = Vec::new();
        while let Some(op) = self.cmp_op()? {
            rest.push((op, self.arith()?));
        }
        Ok(if rest.is_empty() { first } else { Expr::Compare(Box::new(first), rest) })
    }

    fn binary(
        &mut self,
        ops: &[(&str, BinOp)],
        next: fn(&mut Self) -> Result<Expr, ParseError>,
    ) -> Result<Expr, ParseError> {
        let mut left = next(self)?;
        'more: loop {
            for (text, op) in ops {
                if self.eat_op(text)? {
                    left = Expr::Bin(*op, Box::new(left), Box::new(next(self)?));
                    continue 'more;
                }
            }
            for (text, node) in
                [("|", "BitOr"), ("^", "BitXor"), ("&", "BitAnd"), ("<<", "LShift"), (">>", "RShift"), ("@", "MatMult")]
            {
                if self.is_op(text) {
                    return Err(ParseError::Uses(node));
                }
            }
            return Ok(left);
        }
    }

    fn arith(&mut self) -> Result<Expr, ParseError> {
        self.binary(&[("+", BinOp::Add), ("-", BinOp::Sub)], Self::term)
    }

    fn term(&mut self) -> Result<Expr, ParseError> {
        self.binary(&[("*", BinOp::Mul), ("/", BinOp::Div), ("//", BinOp::FloorDiv), ("%", BinOp::Mod)], Self::factor)
    }

    fn factor(&mut self) -> Result<Expr, ParseError> {
        if self.eat_op("-")? {
            return Ok(Expr::Neg(Box::new(self.nested(Self::factor)?)));
        }
        if self.is_op("+") {
            return Err(ParseError::Uses("UAdd"));
        }
        if self.is_op("~") {
            return Err(ParseError::Uses("Invert"));
        }
        if self.is_name("await") {
            return Err(ParseError::Uses("Await"));
        }
        let e = self.primary()?;
        if self.is_op("**") {
            return Err(ParseError::Uses("Pow"));
        }
        Ok(e)
    }

    fn primary(&mut self) -> Result<Expr, ParseError> {
        let mut e = self.atom()?;
        loop {
            if self.eat_op(".")? {
                let Tok::Name(attr) = self.bump()? else { return Err(syntax("expected a name after `.`", self.at)) };
                if attr.starts_with('_') {
                    return Err(ParseError::UnderscoreAttr(attr));
                }
                e = Expr::Attr(Box::new(e), attr);
            } else if self.eat_op("[")? {
                let key = self.key()?;
                if self.is_op(":") {
                    return Err(ParseError::Uses("Slice"));
                }
                self.expect_op("]")?;
                e = Expr::Item(Box::new(e), key);
            } else if self.eat_op("(")? {
                let func = match &e {
                    Expr::Name(n) => match n.as_str() {
                        "len" => Some(Func::Len),
                        "abs" => Some(Func::Abs),
                        "str" => Some(Func::Str),
                        "type_name" => Some(Func::TypeName),
                        _ => None,
                    },
                    _ => None,
                };
                let arg = if self.is_op(")") { None } else { Some(self.nested(Self::expr)?) };
                let Some(func) = func.filter(|_| self.is_op(")")) else { return Err(ParseError::BadCall) };
                self.bump()?;
                let Some(arg) = arg else { return Err(ParseError::BadCall) };
                e = Expr::Call(func, Box::new(arg));
            } else {
                return Ok(e);
            }
        }
    }

    /// An item's key: a constant, or a negative number.
    fn key(&mut self) -> Result<Snap, ParseError> {
        let negative = self.eat_op("-")?;
        let key = match (self.bump()?, negative) {
            (Tok::Num(Snap::Int(i)), true) => Snap::Int(-i),
            (Tok::Num(Snap::Float(f)), true) => Snap::Float(-f),
            (Tok::Num(Snap::BigInt(d)), true) => Snap::BigInt(format!("-{d}")),
            (Tok::Num(n), false) => n,
            (Tok::Str(s), false) => self.more_text(s)?,
            (Tok::Bytes(b), false) => Snap::Bytes(b),
            (Tok::Name(n), false) if n == "True" => Snap::Bool(true),
            (Tok::Name(n), false) if n == "False" => Snap::Bool(false),
            (Tok::Name(n), false) if n == "None" => Snap::None,
            _ => return Err(ParseError::KeyNotConstant),
        };
        if !self.is_op("]") && !self.is_op(":") {
            return Err(ParseError::KeyNotConstant);
        }
        Ok(key)
    }

    /// `'a' 'b'`: adjacent strings are one, as in Python.
    fn more_text(&mut self, mut s: String) -> Result<Snap, ParseError> {
        while let Tok::Str(more) = &self.tok {
            s.push_str(more);
            self.bump()?;
        }
        Ok(Snap::Str(s))
    }

    fn atom(&mut self) -> Result<Expr, ParseError> {
        let at = self.at;
        match self.bump()? {
            Tok::Num(n) => Ok(Expr::Const(n)),
            Tok::Str(s) => Ok(Expr::Const(self.more_text(s)?)),
            Tok::Bytes(b) => Ok(Expr::Const(Snap::Bytes(b))),
            Tok::FString => Err(ParseError::Uses("JoinedStr")),
            Tok::Name(n) => match n.as_str() {
                "True" => Ok(Expr::Const(Snap::Bool(true))),
                "False" => Ok(Expr::Const(Snap::Bool(false))),
                "None" => Ok(Expr::Const(Snap::None)),
                "lambda" => Err(ParseError::Uses("Lambda")),
                "await" => Err(ParseError::Uses("Await")),
                "yield" => Err(ParseError::Uses("Yield")),
                kw if KEYWORDS.contains(&kw) => Err(syntax(format!("expected a value, found `{kw}`"), at)),
                _ => Ok(Expr::Name(n)),
            },
            Tok::Op("(") => {
                if self.eat_op(")")? {
                    return Ok(Expr::Display(SeqKind::Tuple, Vec::new()));
                }
                let first = self.nested(Self::expr)?;
                if self.is_name("for") {
                    return Err(ParseError::Uses("GeneratorExp"));
                }
                if self.eat_op(")")? {
                    return Ok(first);
                }
                let items = self.display_rest(first, ")")?;
                Ok(Expr::Display(SeqKind::Tuple, items))
            }
            Tok::Op("[") => {
                if self.eat_op("]")? {
                    return Ok(Expr::Display(SeqKind::List, Vec::new()));
                }
                let first = self.nested(Self::expr)?;
                if self.is_name("for") {
                    return Err(ParseError::Uses("ListComp"));
                }
                if self.eat_op("]")? {
                    return Ok(Expr::Display(SeqKind::List, vec![first]));
                }
                Ok(Expr::Display(SeqKind::List, self.display_rest(first, "]")?))
            }
            Tok::Op("{") => Err(ParseError::Uses("Dict or Set")),
            Tok::Op("*") => Err(ParseError::Uses("Starred")),
            Tok::Op("...") => Err(ParseError::Uses("Ellipsis")),
            tok => {
                self.tok = tok;
                self.at = at;
                Err(self.unexpected("a value"))
            }
        }
    }

    /// The items of a display after its first, up to `close`.
    fn display_rest(&mut self, first: Expr, close: &'static str) -> Result<Vec<Expr>, ParseError> {
        let mut items = vec![first];
        while self.eat_op(",")? {
            if self.is_op(close) {
                break;
            }
            items.push(self.nested(Self::expr)?);
        }
        self.expect_op(close)?;
        Ok(items)
    }
}
