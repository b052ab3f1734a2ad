import type { CommandUnknownOpts } from '@commander-js/extra-typings';

// `mesh completion bash|zsh`: completion scripts written from the CLI's own definition, so a new
// verb or flag completes as soon as it is declared. Each script holds the tree of verbs and their
// flags; a word that is no verb or flag (a manifest, a node name) falls back to file names.

interface Node {
  path: string;
  verbs: { name: string; summary: string }[];
  flags: string[];
}

/** Every command of the definition, by the verbs typed to reach it ('' for `mesh` itself). */
const treeOf = (command: CommandUnknownOpts, path = ''): Node[] => {
  const verbs = command.commands.map((sub) => ({ name: sub.name(), summary: sub.description() }));
  const flags = [...command.options.filter((o) => !o.hidden).map((o) => o.long ?? o.short ?? ''), '--help'].filter(Boolean);
  return [{ path, verbs, flags }, ...command.commands.filter((sub) => sub.name() !== 'help').flatMap((sub) => treeOf(sub, path === '' ? sub.name() : `${path} ${sub.name()}`))];
};

const quote = (text: string): string => `'${text.replaceAll("'", "'\\''")}'`;

export const bashCompletion = (program: CommandUnknownOpts): string => {
  const tree = treeOf(program);
  const cases = tree.map((n) => `    ${quote(n.path)}) verbs=${quote(n.verbs.map((v) => v.name).join(' '))}; flags=${quote(n.flags.join(' '))} ;;`);
  return `# bash completion for mesh, written by \`mesh completion bash\` from the CLI's definition.
# Load it with: source <(mesh completion bash)
_mesh_at() {
  case "$1" in
${cases.join('\n')}
    *) verbs=''; flags='' ;;
  esac
}
_mesh() {
  local cur at word i verbs flags
  cur="\${COMP_WORDS[COMP_CWORD]}"
  at=''
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    [[ "$word" == -* ]] && continue
    _mesh_at "$at"
    if [[ " $verbs " == *" $word "* ]]; then at="\${at:+$at }$word"; fi
  done
  _mesh_at "$at"
  if [[ "$cur" == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$flags" -- "$cur")
  else
    mapfile -t COMPREPLY < <(compgen -W "$verbs" -- "$cur")
  fi
}
complete -o default -F _mesh mesh
`;
};

export const zshCompletion = (program: CommandUnknownOpts): string => {
  const tree = treeOf(program);
  const cases = tree.map(
    (n) => `    ${quote(n.path)}) verbs=(${n.verbs.map((v) => quote(`${v.name}:${v.summary.replaceAll(':', '\\:')}`)).join(' ')}); flags=(${n.flags.map(quote).join(' ')}) ;;`,
  );
  return `#compdef mesh
# zsh completion for mesh, written by \`mesh completion zsh\` from the CLI's definition.
# Load it with: source <(mesh completion zsh)   (or save it as _mesh in a directory on $fpath)
_mesh_at() {
  case "$1" in
${cases.join('\n')}
    *) verbs=(); flags=() ;;
  esac
}
_mesh() {
  local at='' word i
  local -a verbs flags
  for ((i = 2; i < CURRENT; i++)); do
    word="\${words[i]}"
    [[ "$word" == -* ]] && continue
    _mesh_at "$at"
    if (( \${verbs[(I)\${word}:*]} )); then at="\${at:+$at }$word"; fi
  done
  _mesh_at "$at"
  if [[ "$PREFIX" == -* ]]; then
    compadd -- $flags
  elif (( \${#verbs} > 0 )); then
    _describe -t verbs 'mesh verb' verbs
  else
    _files
  fi
}
if [[ "$funcstack[1]" == _mesh ]]; then _mesh "$@"; else compdef _mesh mesh; fi
`;
};

