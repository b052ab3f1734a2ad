// A workstation's /etc/hosts as issue 128 of the seeds found it: the distribution's lines, two
// marked blocks of a development tool, and the operator's own entries — everything the mesh's
// region must leave byte for byte.
export const WORKSTATION_HOSTS = [
  '127.0.0.1\tlocalhost\n',
  '127.0.1.1\tnovox.localdomain novox\n',
  '# BEGIN devtool web\n',
  '127.0.0.1 web.test api.test\n',
  '# END devtool web\n',
  '# BEGIN devtool docs\n',
  '127.0.0.1 docs.test\n',
  '# END devtool docs\n',
  '10.0.0.9 printer   # by hand\r\n',
].join('');
