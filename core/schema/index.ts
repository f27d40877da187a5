/** One declaration language: builders (decl.ts), parsing by origin (parse.ts), describing (describe.ts). README.md says how. */
export * from './decl';
export * from './parse';
export * from './describe';
