# bench/lagproxy.py LISTEN_PORT TARGET_PORT DELAY_MS - a TCP proxy on
# 127.0.0.1 that holds every piece of data DELAY_MS before passing it on,
# in both directions: a round trip costs 2 * DELAY_MS more, as on a real
# network, without touching the host's qdiscs (other tests share lo).
# Prints "ready" once listening. Python's asyncio moves a few hundred MB/s
# at most, so it is for latency, not for throughput ceilings.
import asyncio, sys
lport, tport, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1000.0

async def pipe(reader, writer):
    q = asyncio.Queue()
    async def rd():
        while True:
            data = await reader.read(1 << 16)
            await q.put((asyncio.get_running_loop().time() + delay, data))
            if not data:
                return
    async def wr():
        while True:
            due, data = await q.get()
            now = asyncio.get_running_loop().time()
            if due > now:
                await asyncio.sleep(due - now)
            if not data:
                try:
                    writer.write_eof()
                except OSError:
                    pass
                return
            writer.write(data)
            await writer.drain()
    try:
        await asyncio.gather(rd(), wr())
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()

async def handle(cr, cw):
    try:
        sr, sw = await asyncio.open_connection("127.0.0.1", tport)
    except OSError:
        cw.close()
        return
    await asyncio.gather(pipe(cr, sw), pipe(sr, cw))

async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", lport)
    print("ready", flush=True)
    async with srv:
        await srv.serve_forever()

asyncio.run(main())
