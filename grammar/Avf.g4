// The .avf job language (docs/language.md, ../shared/spec/avf-language.md).
//
// Only compiler/lex and compiler/parse see the code ANTLR generates from this
// file. The lexer never fails: every character sequence becomes some token, and
// the malformed ones (BAD_CHAR, UNTERMINATED_*) are turned into diagnostics by
// compiler/lex. compiler/lex also drops the newlines that cannot end a field
// (inside () and [], after an operator, after `{`), so the parser rules below
// only meet NL where it separates fields or declarations.
grammar Avf;

// ---------------------------------------------------------------- parser

file        : (item | sep)* EOF ;
item        : importDecl | decl ;

// import "std/hardware"
importDecl  : IMPORT STRING ;

// KIND NAME [: BASE] { FIELD* }
decl        : kind=anyName name=IDENT (COLON base=IDENT)? body ;

// Separators between fields are checked when the AST is built, so that a
// missing `;` is one precise error and parsing carries on as if it were there.
body        : LBRACE (field | sep)* RBRACE ;
sep         : (NL | SEMI)+ ;

// NAME = EXPR | NAME { FIELD* }
field       : anyName ASSIGN expr      # assignField
            | anyName body             # recordField
            ;

// Binary operators are flat loops so that a long chain builds a flat tree.
expr        : term (addOp term)* ;
term        : unary (mulOp unary)* ;
unary       : (MINUS | PLUS)* postfix ;
postfix     : primary (DOT anyName)* ;

primary     : NUMBER                                             # numberExpr
            | STRING                                             # stringExpr
            | (TRUE | FALSE)                                     # boolExpr
            | AUTO                                               # autoExpr
            | anyName body                                       # recordExpr
            | anyName LPAREN (expr (COMMA expr)* COMMA?)? RPAREN # callExpr
            | anyName                                            # nameExpr
            | LBRACKET (expr (COMMA expr)* COMMA?)? RBRACKET     # listExpr
            | LPAREN expr RPAREN                                 # parenExpr
            ;

addOp       : PLUS | MINUS ;
mulOp       : STAR | SLASH ;

// Declaration kinds are keywords, yet fields are named after them
// (`node = hgx_a100`, `model = llm7b`), so a field name may be either.
anyName     : IDENT | GPU | FABRIC | NODE | CLUSTER | STORAGE | DATASET | MODEL | JOB ;

// ---------------------------------------------------------------- lexer

IMPORT      : 'import' ;
TRUE        : 'true' ;
FALSE       : 'false' ;
AUTO        : 'auto' ;
GPU         : 'gpu' ;
FABRIC      : 'fabric' ;
NODE        : 'node' ;
CLUSTER     : 'cluster' ;
STORAGE     : 'storage' ;
DATASET     : 'dataset' ;
MODEL       : 'model' ;
JOB         : 'job' ;

IDENT       : [A-Za-z_] [A-Za-z0-9_]* ;

// A number with its unit suffix is one token (`80GiB`, `900GB/s`, `93%`), so
// that single-letter units never steal identifiers. compiler/units reads it.
NUMBER      : DIGITS ('.' DIGITS)? EXPONENT? UNIT? ;
fragment DIGITS   : [0-9] ('_'? [0-9])* ;
fragment EXPONENT : [eE] [+-]? DIGITS ;
fragment UNIT     : [A-Za-z%] [A-Za-z0-9]* ('/' [A-Za-z]+)? ;

STRING      : '"' (ESCAPE | ~["\\\r\n])* '"' ;
// Escapes are validated in compiler/lex, which can point at the bad one.
fragment ESCAPE : '\\' ~[\r\n] ;
UNTERMINATED_STRING : '"' (ESCAPE | ~["\\\r\n])* '\\'? ;

LBRACE      : '{' ;
RBRACE      : '}' ;
LBRACKET    : '[' ;
RBRACKET    : ']' ;
LPAREN      : '(' ;
RPAREN      : ')' ;
ASSIGN      : '=' ;
COLON       : ':' ;
SEMI        : ';' ;
COMMA       : ',' ;
DOT         : '.' ;
PLUS        : '+' ;
MINUS       : '-' ;
STAR        : '*' ;
SLASH       : '/' ;

NL          : '\r'? '\n' ;
WS          : [ \t\f\r]+ -> channel(HIDDEN) ;
LINE_COMMENT  : '//' ~[\r\n]* -> channel(HIDDEN) ;
BLOCK_COMMENT : '/*' .*? '*/' -> channel(HIDDEN) ;
// Cannot contain `*/`, so it only wins where the comment is never closed.
UNTERMINATED_COMMENT : '/*' (~'*' | '*'+ ~[*/])* '*'* EOF ;
BAD_CHAR    : . ;
