"""Checks the scripted test agent (test/support/a2a_agent.py) with the bare a2a-sdk 1.3 client.

Plain sync tests that call ``asyncio.run``; the server runs once per session
(fixture ``agent`` in conftest.py).
"""

import asyncio
import contextlib
import uuid

import grpc
import httpx
import pytest

from a2a.client import A2ACardResolver, A2AClientError, AgentCardResolutionError, ClientConfig, create_client
from a2a.types import (CancelTaskRequest, GetTaskRequest, Message, Part, Role, SendMessageConfiguration,
                       SendMessageRequest, TaskState)
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError, UnsupportedOperationError

from support.bridge_rpc import (get_task, message as rpc_message, proto_answer, send as rpc_send, task_of,
                                wait_for_state)
from support.waiting import wait_until


S = TaskState


def user_msg(text, task=None, context_id=None) -> Message:
    msg = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)])
    if task is not None:
        msg.task_id, msg.context_id = task.id, task.context_id
    elif context_id:
        msg.context_id = context_id
    return msg


@contextlib.asynccontextmanager
async def connect(url, streaming=True, headers=None, **config):
    """An SDK client for the agent at `url`, always with a 30 s httpx client."""
    async with httpx.AsyncClient(timeout=30, headers=headers) as http:
        client = await create_client(url, client_config=ClientConfig(
            httpx_client=http, streaming=streaming, **config))
        try:
            yield client
        finally:
            await client.close()


async def sdk_send(client, text, task=None, context_id=None) -> list:
    request = SendMessageRequest(message=user_msg(text, task, context_id))
    return [event async for event in client.send_message(request)]


def texts(parts) -> str:
    return ''.join(part.text for part in parts)


def kinds(events) -> list[str]:
    return [event.WhichOneof('payload') for event in events]


def streamed_text(events) -> str:
    """Apply artifact updates (append / replace by id) and join the artifacts."""
    artifacts: dict[str, str] = {}
    for event in events:
        if event.HasField('artifact_update'):
            update = event.artifact_update
            previous = artifacts.get(update.artifact.artifact_id, '') if update.append else ''
            artifacts[update.artifact.artifact_id] = previous + texts(update.artifact.parts)
    return ''.join(artifacts.values())


async def blocking_task(url, text, task=None, **config):
    async with connect(url, streaming=False, **config) as client:
        events = await sdk_send(client, text, task)
    assert kinds(events) == ['task']
    return events[0].task


# -- echo over every transport ---------------------------------------------


def test_echo_blocking_jsonrpc(agent):
    async def main():
        async with connect(agent.agent('echo'), streaming=False) as client:
            events = await sdk_send(client, 'hello')
        task = events[0].task
        assert kinds(events) == ['task']
        assert task.status.state == S.TASK_STATE_COMPLETED
        assert proto_answer(task) == f'echo[{task.context_id}]: hello'

    asyncio.run(main())


def test_echo_streaming_jsonrpc(agent):
    async def main():
        async with connect(agent.agent('echo')) as client:
            events = await sdk_send(client, 'stream me')
        assert kinds(events) == ['task', 'status_update', 'artifact_update', 'status_update']
        ctx = events[0].task.context_id
        assert events[0].task.status.state == S.TASK_STATE_SUBMITTED
        assert events[1].status_update.status.state == S.TASK_STATE_WORKING
        assert texts(events[1].status_update.status.message.parts) == 'working...'
        assert streamed_text(events) == f'echo[{ctx}]: stream me'
        assert events[-1].status_update.status.state == S.TASK_STATE_COMPLETED

    asyncio.run(main())


def test_rest_only(agent):
    async def main():
        with pytest.raises(ValueError, match='no compatible transports'):
            async with connect(agent.agent('rest-only')):
                pass
        async with connect(agent.agent('rest-only'), supported_protocol_bindings=['HTTP+JSON']) as client:
            events = await sdk_send(client, 'over rest')
        assert streamed_text(events) == f'echo[{events[0].task.context_id}]: over rest'
        assert events[-1].status_update.status.state == S.TASK_STATE_COMPLETED

    asyncio.run(main())


def test_grpc_only(agent):
    grpc_config = dict(supported_protocol_bindings=['GRPC'],
                       grpc_channel_factory=lambda url: grpc.aio.insecure_channel(url))

    async def main():
        async with connect(agent.agent('grpc-only'), **grpc_config) as client:
            events = await sdk_send(client, 'over grpc')
        assert kinds(events)[0] == 'task'
        assert streamed_text(events) == f'echo[{events[0].task.context_id}]: over grpc'
        task = await blocking_task(agent.agent('grpc-only'), 'blocking grpc', **grpc_config)
        assert proto_answer(task) == f'echo[{task.context_id}]: blocking grpc'
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, agent.agent('grpc-only')).get_agent_card()
        assert [(i.protocol_binding, i.url) for i in card.supported_interfaces] == [('GRPC', agent.grpc)]

    asyncio.run(main())


def test_v03_uses_compat_transport(agent):
    async def main():
        agent.clear_headers()
        async with connect(agent.agent('v03'), streaming=False) as client:
            events = await sdk_send(client, 'old times')
        task = events[0].task
        assert task.status.state == S.TASK_STATE_COMPLETED
        assert proto_answer(task) == f'echo[{task.context_id}]: old times'
        posts = [r for r in agent.headers() if r['method'] == 'POST' and r['path'] == '/v03/']
        assert posts and posts[-1]['headers'].get('a2a-version') == '0.3'

    asyncio.run(main())


def test_v03_raw_message_send_without_version_header(agent):
    body = {'jsonrpc': '2.0', 'id': 1, 'method': 'message/send', 'params': {'message': {
        'kind': 'message', 'messageId': str(uuid.uuid4()), 'role': 'user',
        'parts': [{'kind': 'text', 'text': 'raw 0.3'}]}}}
    response = httpx.post(agent.agent('v03') + '/', json=body, timeout=10)
    result = response.json()['result']
    assert result['kind'] == 'task'
    assert result['status']['state'] == 'completed'
    assert result['artifacts'][0]['parts'][0]['text'] == f"echo[{result['contextId']}]: raw 0.3"
    card = httpx.get(agent.agent('v03') + '/.well-known/agent-card.json', timeout=10).json()
    assert card['protocolVersion'] == '0.3'
    assert [i['protocolVersion'] for i in card['supportedInterfaces']] == ['0.3']


# -- conversation flows ----------------------------------------------------


@pytest.mark.parametrize('name, state, question, reply', [
    ('ask', S.TASK_STATE_INPUT_REQUIRED, 'which city?', 'continued'),
    ('auth', S.TASK_STATE_AUTH_REQUIRED, 'please sign in', 'signed in'),
])
def test_interrupted_then_continuation(agent, name, state, question, reply):
    async def main():
        first = await blocking_task(agent.agent(name), 'weather please')
        assert first.status.state == state
        assert texts(first.status.message.parts) == question
        second = await blocking_task(agent.agent(name), 'Paris', task=first)
        assert second.id == first.id
        assert second.status.state == S.TASK_STATE_COMPLETED
        assert proto_answer(second) == f'{reply}[{first.context_id}]: Paris'

    asyncio.run(main())


def test_memory_keeps_context(agent):
    async def main():
        async with connect(agent.agent('memory'), streaming=False) as client:
            first = (await sdk_send(client, 'remember the milk'))[0].task
            assert proto_answer(first) == 'ok, I will remember the milk'
            same = (await sdk_send(client, 'recall', context_id=first.context_id))[0].task
            other = (await sdk_send(client, 'recall'))[0].task
        assert same.context_id == first.context_id and same.id != first.id
        assert proto_answer(same) == 'you told me the milk'
        assert proto_answer(other) == 'I remember nothing'
        login = await blocking_task(agent.agent('memory'), 'login')
        assert login.status.state == S.TASK_STATE_INPUT_REQUIRED
        assert texts(login.status.message.parts) == 'password?'
        done = await blocking_task(agent.agent('memory'), 'hunter2', task=login)
        assert (done.status.state, proto_answer(done)) == (S.TASK_STATE_COMPLETED, 'logged in')

    asyncio.run(main())


@pytest.mark.parametrize('name, text', [('echo', 'sleep:30'), ('stall', 'hi')])
def test_long_work_is_cancellable(agent, name, text):
    async def main():
        async with connect(agent.agent(name), streaming=False) as client:
            request = SendMessageRequest(message=user_msg(text),
                                         configuration=SendMessageConfiguration(return_immediately=True))
            task = [event async for event in client.send_message(request)][0].task
            assert task.status.state not in (S.TASK_STATE_COMPLETED, S.TASK_STATE_CANCELED)
            cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
            assert cancelled.status.state == S.TASK_STATE_CANCELED
            stored = await client.get_task(GetTaskRequest(id=task.id))
            assert stored.status.state == S.TASK_STATE_CANCELED

    asyncio.run(asyncio.wait_for(main(), 10))


@pytest.mark.parametrize('name, done', [('echo', 'TASK_STATE_COMPLETED'), ('ask', 'TASK_STATE_INPUT_REQUIRED')])
def test_held_work_ends_when_its_name_is_released_and_a_released_name_holds_nothing(agent, name, done):
    url, hold = agent.agent(name), f'{name}-{uuid.uuid4().hex}'
    held = task_of(rpc_send(url, rpc_message(f'hold:{hold}'), blocking=False))
    other = task_of(rpc_send(url, rpc_message(f'hold:{hold}-other'), blocking=False))
    wait_until(lambda: task_of(get_task(url, held['id'])), 'the held turn to work',
               until=lambda task: task['status']['state'] == 'TASK_STATE_WORKING')
    agent.release(hold)
    wait_for_state(url, held['id'], done)
    assert task_of(get_task(url, other['id']))['status']['state'] == 'TASK_STATE_WORKING'  # another name: still held
    agent.release(f'{hold}-other')
    wait_for_state(url, other['id'], done)
    again = task_of(rpc_send(url, rpc_message(f'hold:{hold}')))  # released before it came: not held
    assert again['status']['state'] == done, again


@pytest.mark.parametrize('name, state, message', [
    ('fail', S.TASK_STATE_FAILED, 'the backend exploded'),
    ('reject', S.TASK_STATE_REJECTED, 'I will not do that'),
    ('cancelled', S.TASK_STATE_CANCELED, 'stopped by the agent'),
])
def test_end_states(agent, name, state, message):
    task = asyncio.run(blocking_task(agent.agent(name), 'go'))
    assert task.status.state == state
    assert texts(task.status.message.parts) == message


def test_refuse_unknown_and_expired_context(agent):
    async def main():
        async with connect(agent.agent('refuse'), streaming=False) as client:
            with pytest.raises(InvalidParamsError, match='unknown or expired context'):
                await sdk_send(client, 'hi', context_id=str(uuid.uuid4()))
            issued = (await sdk_send(client, 'first'))[0].task
            again = (await sdk_send(client, 'second', context_id=issued.context_id))[0].task
            assert proto_answer(again) == f'echo[{issued.context_id}]: second'
            agent.expire()
            with pytest.raises(InvalidParamsError, match='unknown or expired context'):
                await sdk_send(client, 'third', context_id=issued.context_id)
        async with connect(agent.agent('refuse')) as client:  # the streaming path refuses too
            with pytest.raises(InvalidParamsError):
                await sdk_send(client, 'hi', context_id=str(uuid.uuid4()))

    asyncio.run(main())


def test_forget_makes_continuation_task_not_found(agent):
    async def main():
        first = await blocking_task(agent.agent('ask'), 'weather')
        assert first.status.state == S.TASK_STATE_INPUT_REQUIRED
        agent.forget()
        with pytest.raises(TaskNotFoundError):
            await blocking_task(agent.agent('ask'), 'Paris', task=first)

    asyncio.run(main())


def test_finish_makes_continuation_unsupported(agent):
    async def main():
        first = await blocking_task(agent.agent('ask'), 'weather')
        assert first.status.state == S.TASK_STATE_INPUT_REQUIRED
        agent.finish()
        async with connect(agent.agent('ask'), streaming=False) as client:
            stored = await client.get_task(GetTaskRequest(id=first.id))
            assert stored.status.state == S.TASK_STATE_COMPLETED
            with pytest.raises(UnsupportedOperationError, match='terminal state'):
                await sdk_send(client, 'Paris', task=first)

    asyncio.run(main())


# -- streaming shapes ------------------------------------------------------


@pytest.mark.parametrize('name, expected', [
    ('stream-chunks', 'Hello there. How are you today? Fine.'),
    ('stream-cumulative', 'The answer is 42.'),
    ('stream-rewrite', 'The answer is 42.'),
    ('stream-multi', 'First part.Second part.'),
    ('stream-snapshot', 'snapshot answer'),
])
def test_stream_shapes(agent, name, expected):
    async def streamed():
        async with connect(agent.agent(name)) as client:
            return await sdk_send(client, 'go')

    async def main():
        events, task = await asyncio.gather(streamed(), blocking_task(agent.agent(name), 'go'))
        assert kinds(events)[0] == 'task'
        assert streamed_text(events) == expected
        assert events[-1].status_update.status.state == S.TASK_STATE_COMPLETED
        assert task.status.state == S.TASK_STATE_COMPLETED
        assert proto_answer(task) == expected

    asyncio.run(main())


def test_stream_message_and_status(agent):
    async def main():
        async with connect(agent.agent('stream-message')) as client:
            events = await sdk_send(client, 'go')
        assert kinds(events) == ['message']
        assert texts(events[0].message.parts) == f'message reply[{events[0].message.context_id}]'
        async with connect(agent.agent('stream-status')) as client:
            events = await sdk_send(client, 'go')
        ctx = events[0].task.context_id
        messages = [texts(e.status_update.status.message.parts) for e in events if e.HasField('status_update')]
        assert 'artifact_update' not in kinds(events)
        assert messages == ['thinking...', 'thinking...', f'status answer[{ctx}]']

    asyncio.run(main())


def test_stream_snapshot_sends_a_second_task(agent):
    async def main():
        async with connect(agent.agent('stream-snapshot')) as client:
            events = await sdk_send(client, 'go')
        tasks = [event.task for event in events if event.HasField('task')]
        assert len(tasks) == 2 and tasks[0].id == tasks[1].id
        assert tasks[1].status.state == S.TASK_STATE_COMPLETED
        assert proto_answer(tasks[1]) == 'snapshot answer'

    asyncio.run(main())


def test_stream_gated_first_sentence_before_release(agent):
    async def main():
        seen = []
        async with connect(agent.agent('stream-gated')) as client:
            async for event in client.send_message(SendMessageRequest(message=user_msg('go'))):
                seen.append(event)
                if event.HasField('artifact_update') and not event.artifact_update.last_chunk:
                    assert streamed_text(seen) == 'First sentence. '
                    # the agent is parked at the gate: the stored task has only the first sentence
                    stored = await client.get_task(GetTaskRequest(id=event.artifact_update.task_id))
                    assert stored.status.state == S.TASK_STATE_WORKING
                    assert proto_answer(stored) == 'First sentence. '
                    await asyncio.to_thread(agent.release)
        assert streamed_text(seen) == 'First sentence. Second sentence.'
        assert seen[-1].status_update.status.state == S.TASK_STATE_COMPLETED

    asyncio.run(asyncio.wait_for(main(), 20))


# -- cards, auth and observation -------------------------------------------


def test_card_variants(agent):
    async def main():
        async with httpx.AsyncClient(timeout=10) as http:
            with pytest.raises(AgentCardResolutionError) as missing:
                await A2ACardResolver(http, agent.agent('old')).get_agent_card()
            assert missing.value.status_code == 404
            old = await A2ACardResolver(http, agent.agent('old')).get_agent_card(
                relative_card_path='/.well-known/agent.json')
            assert old.name == 'old'
            hybrid = await A2ACardResolver(http, agent.agent('hybrid')).get_agent_card()
            assert [i.protocol_version for i in hybrid.supported_interfaces] == ['1.0', '0.3']
            legacy = (await http.get(agent.agent('v03-legacy') + '/.well-known/agent-card.json')).json()
            assert 'supportedInterfaces' not in legacy and legacy['protocolVersion'] == '0.3'
            cached = await http.get(agent.agent('cached') + '/.well-known/agent-card.json')
            assert cached.headers['cache-control'] == 'max-age=1'
            revalidated = await http.get(agent.agent('cached') + '/.well-known/agent-card.json',
                                         headers={'If-None-Match': cached.headers['etag']})
            assert revalidated.status_code == 304

    asyncio.run(main())


def test_secure_needs_bearer(agent):
    async def main():
        with pytest.raises(A2AClientError, match='401'):
            await blocking_task(agent.agent('secure'), 'hi')
        task = await blocking_task(agent.agent('secure'), 'hi', headers={'Authorization': 'Bearer s3cret'})
        assert proto_answer(task) == f'echo[{task.context_id}]: hi'
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, agent.agent('secure')).get_agent_card()
        assert card.security_schemes['bearer'].http_auth_security_scheme.scheme == 'bearer'

    asyncio.run(main())


def test_stats_count_cards_and_messages(agent):
    before = agent.stats()

    async def main():
        async with connect(agent.agent('jsonrpc-only'), streaming=False) as client:
            await sdk_send(client, 'one')
            await sdk_send(client, 'two')

    asyncio.run(main())
    after = agent.stats()
    assert after['card_fetches']['jsonrpc-only'] == before['card_fetches']['jsonrpc-only'] + 1
    assert after['messages']['jsonrpc-only'] == before['messages']['jsonrpc-only'] + 2
    assert after['messages']['echo'] == before['messages']['echo']


def test_headers_recorded(agent):
    agent.clear_headers()
    asyncio.run(blocking_task(agent.agent('echo'), 'hi'))
    httpx.get(agent.url + '/no/such/path', timeout=10)
    agent.stats()
    records = agent.headers()
    seen = [(r['method'], r['path']) for r in records]
    assert seen == [('GET', '/echo/.well-known/agent-card.json'), ('POST', '/echo/'), ('GET', '/no/such/path')]
    assert records[1]['headers']['a2a-version'] == '1.0'
    assert records[1]['headers']['content-type'].startswith('application/json')


def test_foreign_and_redirect(agent_pair):
    a, b = agent_pair
    before = b.stats()['messages']['echo']
    task = asyncio.run(blocking_task(a.agent('foreign'), 'travel'))
    assert proto_answer(task) == f'echo[{task.context_id}]: travel'
    assert b.stats()['messages']['echo'] == before + 1
    response = httpx.get(a.agent('redirect') + '/.well-known/agent-card.json', timeout=10)
    assert response.status_code == 307
    assert response.headers['location'] == f'{b.url}/echo/.well-known/agent-card.json'
